/// The tree every device shows for one set of versions: what is at each path and which
/// conflict versions each document has.
///
/// Directory rules, beyond the winner rule of each path:
/// - A folder that holds a live path is shown, whatever its own history says: when one
///   device deletes a folder while another creates or edits a file inside it, the folder comes
///   back with the file (a deletion never beats a concurrent edit, even from above).
/// - A path that must be a folder (its winner is a directory, or something lives below it)
///   shows every file or symlink head of that path as a conflict version, including one that
///   would otherwise have won. So when one device creates a file and another a folder at the
///   same path, the folder takes the path and the file is listed under `.versions/<path>/`:
///   nothing is lost, and the person can `cp` it elsewhere.
public struct LibraryState: Sendable, Equatable {
  /// What a path shows.
  public enum Entry: Hashable, Sendable {
    /// A file or symlink: the current version.
    case document(VersionRecord)
    /// A folder; its record is nil when the folder is shown only because something lives in it.
    case directory(VersionRecord?)
  }

  /// Every visible path (not the root).
  public private(set) var entries: [DocumentPath: Entry] = [:]
  /// The conflict versions of every path that has some, winner order.
  public private(set) var conflicts: [DocumentPath: [VersionRecord]] = [:]
  /// The paths with heads of equal content, whose merge into one record is due (see
  /// ``AutoMerge/sameContent(at:in:)``); such heads never show as conflict versions.
  public private(set) var equalHeads: Set<DocumentPath> = []
  private var ownLive: Set<DocumentPath> = []
  /// For each folder, how many paths strictly below it are live by their own history.
  private var liveBelow: [DocumentPath: Int] = [:]

  /// Computes the whole state in O(paths × depth).
  ///
  /// Two passes over the paths, each asking the set again, rather than one that keeps every
  /// path's state for the second: in a large library that table was the peak of a start.
  public init(_ set: VersionSet) {
    for path in set.paths where set.winner(at: path).map({ !$0.content.isDeletion }) == true {
      ownLive.insert(path)
      adjustAncestors(of: path, by: 1)
    }
    entries.reserveCapacity(set.paths.count + liveBelow.count)
    for path in set.paths {
      guard let state = set.pathState(at: path) else { continue }
      apply(state, at: path)
    }
    for path in liveBelow.keys where set.winner(at: path) == nil { apply(nil, at: path) }
  }

  /// Recomputes only `touched` paths (as returned by `VersionSet.insert(contentsOf:)`) and the
  /// folders above them; the result equals `LibraryState(set)`. Returns the paths recomputed:
  /// `touched`, and each folder above a path that became live or stopped being (the last
  /// thing in a deleted folder went: the folder goes too).
  @discardableResult
  public mutating func update(from set: VersionSet, touched: some Sequence<DocumentPath>)
    -> Set<DocumentPath>
  {
    var recompute: Set<DocumentPath> = []
    var states: [DocumentPath: PathState] = [:]
    for path in touched {
      let state = set.pathState(at: path)
      states[path] = state
      recompute.insert(path)
      let live = state?.isLive ?? false
      guard live != ownLive.contains(path) else { continue }
      if live { ownLive.insert(path) } else { ownLive.remove(path) }
      adjustAncestors(of: path, by: live ? 1 : -1)
      var ancestor = path.parent
      while !ancestor.isRoot {
        recompute.insert(ancestor)
        ancestor = ancestor.parent
      }
    }
    for path in recompute {
      let state = states[path] ?? set.pathState(at: path)
      apply(state, at: path)
    }
    return recompute
  }

  private mutating func adjustAncestors(of path: DocumentPath, by delta: Int) {
    var ancestor = path.parent
    while !ancestor.isRoot {
      let count = liveBelow[ancestor, default: 0] + delta
      liveBelow[ancestor] = count == 0 ? nil : count
      ancestor = ancestor.parent
    }
  }

  private mutating func apply(_ state: PathState?, at path: DocumentPath) {
    let hasLiveBelow = liveBelow[path] != nil
    if state?.hasEqualHeads == true {
      equalHeads.insert(path)
    } else if !equalHeads.isEmpty {
      equalHeads.remove(path)
    }
    guard let state, state.isLive || hasLiveBelow else {
      entries[path] = hasLiveBelow ? .directory(nil) : nil
      conflicts[path] = nil
      return
    }
    let losing: [VersionRecord]
    if state.winner.kind == .directory || hasLiveBelow {
      let folder = state.winner.kind == .directory ? state.winner : nil
      entries[path] = .directory(folder)
      losing = PathState.oneOfEachContent(
        state.heads.filter { $0.kind == .file || $0.kind == .symlink })
    } else {
      entries[path] = .document(state.winner)
      losing = state.losingDocuments
    }
    conflicts[path] = losing.isEmpty ? nil : losing
  }

  /// The record shown at `path`, if the path shows a document or a recorded folder.
  public func current(at path: DocumentPath) -> VersionRecord? {
    switch entries[path] {
    case .document(let record): record
    case .directory(let record): record
    case nil: nil
    }
  }

  /// The names under `.versions/<path>/`, for every path in conflict.
  public var versionsListing: [DocumentPath: [[UInt8]]] {
    conflicts.mapValues {
      $0.map(VersionsName.name(for:)).sorted { $0.lexicographicallyPrecedes($1) }
    }
  }

  public static func == (lhs: LibraryState, rhs: LibraryState) -> Bool {
    lhs.entries == rhs.entries && lhs.conflicts == rhs.conflicts
      && lhs.equalHeads == rhs.equalHeads
  }
}
