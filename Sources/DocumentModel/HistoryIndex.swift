/// The earlier versions of every document, as `.history` shows them: for each path, its file
/// and symlink versions that some known version follows (so neither the current version nor a
/// conflict version) and that retention has not released, and for each folder, the names below
/// it that lead to such versions.
///
/// Kept up to date from the paths that `VersionSet.insert(contentsOf:)` reports, so a listing
/// of `.history/<folder>/` costs O(its entries) and an update O(versions of the touched path ×
/// its depth), whatever the length of the whole library's history.
public struct HistoryIndex: Sendable, Equatable {
  /// The paths that have earlier versions. The versions themselves are read from the set when
  /// asked for (from its archive, when it has one), so the index costs memory per path, not
  /// per version.
  public private(set) var paths: Set<DocumentPath> = []
  /// For each folder, each child name and how many paths with earlier versions are at or below
  /// it.
  private var below: [DocumentPath: [[UInt8]: Int]] = [:]
  /// Versions whose content retention let go: their records stay (they carry the ancestry
  /// every device needs to tell heads), but nothing shows them. With an archive, the archive
  /// says which (`VersionArchive.isReleased`) and this holds none.
  public private(set) var released: Set<VersionID> = []

  public init() {}

  /// Builds the index of a whole set in O(records × depth).
  public init(_ set: VersionSet, released: Set<VersionID> = []) {
    self.released = released
    update(from: set, touched: set.paths)
  }

  /// The index of a set whose archive found these paths with earlier versions.
  public init(pathsWithEarlierVersions: some Sequence<DocumentPath>) {
    for path in pathsWithEarlierVersions where !path.isRoot && paths.insert(path).inserted {
      adjustAncestors(of: path, by: 1)
    }
  }

  /// Takes versions out of the history for good: retention released them (and the set's
  /// archive, if any, says so already).
  public mutating func release(_ ids: some Sequence<VersionID>, in set: VersionSet) {
    var touched: Set<DocumentPath> = []
    for id in ids {
      if set.archive == nil { released.insert(id) }
      if let record = set[id] { touched.insert(record.path) }
    }
    update(from: set, touched: touched)
  }

  /// Whether retention released the content of `id`.
  public func isReleased(_ id: VersionID, in set: VersionSet) -> Bool {
    released.contains(id) || set.archive?.isReleased(id) == true
  }

  /// Recomputes which of `touched` paths have earlier versions: O(1) per path with an archive,
  /// O(versions of the path) without.
  public mutating func update(from set: VersionSet, touched: some Sequence<DocumentPath>) {
    for path in touched where !path.isRoot {
      let has =
        set.archive?.hasEarlierVersions(at: path) ?? !earlier(at: path, in: set).isEmpty
      guard has != paths.contains(path) else { continue }
      if has { paths.insert(path) } else { paths.remove(path) }
      adjustAncestors(of: path, by: has ? 1 : -1)
    }
  }

  /// The file and symlink versions of `path` that some version follows and that retention has
  /// not released, in the set's order.
  private func earlier(at path: DocumentPath, in set: VersionSet) -> [VersionRecord] {
    let heads = Set(set.heads(at: path).map(\.id))
    return set.records(at: path).filter { record in
      (record.kind == .file || record.kind == .symlink) && !heads.contains(record.id)
        && !isReleased(record.id, in: set)
    }
  }

  private mutating func adjustAncestors(of path: DocumentPath, by delta: Int) {
    var folder = DocumentPath.root
    for component in path.components {
      let count = (below[folder]?[component] ?? 0) + delta
      below[folder, default: [:]][component] = count > 0 ? count : nil
      if below[folder]?.isEmpty == true { below[folder] = nil }
      folder = folder.appending(component)
    }
  }

  /// The earlier versions of the document at `path`, in the set's order (arrival order without
  /// an archive).
  public func earlierVersions(at path: DocumentPath, in set: VersionSet) -> [VersionRecord] {
    paths.contains(path) ? earlier(at: path, in: set) : []
  }

  /// The names in `.history/<folder>/` that are folders: the paths below it with earlier
  /// versions (a document's own folder among them).
  public func folders(in folder: DocumentPath) -> [[UInt8]] {
    (below[folder] ?? [:]).keys.sorted { $0.lexicographicallyPrecedes($1) }
  }

  /// Whether `.history/<path>/` exists.
  public func hasFolder(_ path: DocumentPath) -> Bool {
    path.isRoot || below[path.parent]?[path.name] != nil
  }
}
