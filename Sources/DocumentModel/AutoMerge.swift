/// An automatic merge of the heads of one document in conflict, as `.docsyncattributes` asks:
/// decided from the versions alone, so that every device that sees the same heads makes the
/// same merge record (same content, parents, author fields and time, hence the same id), and
/// devices that merge at once do not make a new conflict; the hub keeps one copy of it.
///
/// Three steps, none of them I/O: `plan` (which heads, over which ancestors, needing which
/// content), `merge` (the bytes, from that content), `record` (the version, from the merged
/// content's hash). The caller reads the content and writes the merged blob between them,
/// outside its locks.
public struct AutoMerge: Sendable, Equatable {
  /// The author fields of every merge record. No device made it alone: each one that saw the
  /// heads made the same record, so the fields must not name the device that happened to.
  public static let deviceID = DeviceID(high: 0, low: 0)
  public static let deviceName = "merge"

  public let path: DocumentPath
  public let policy: MergePolicy
  /// The heads, sorted by id: the fixed order of the pairwise merges.
  public let heads: [VersionRecord]
  /// For each head after the first, the ancestor it is merged over (nil when history has none):
  /// the latest nearest common ancestor it has with one of the heads before it, so that what
  /// two heads both saw is not taken for an overlap.
  public let bases: [VersionRecord?]
  /// The winner's executable bit, which the merge keeps.
  public let executable: Bool
  /// The content every head has, when the heads are equal (``sameContent(at:in:)``): their
  /// merge is that content, with nothing to read.
  public let sameContent: VersionContent?
  /// The file time the merge shows: the best head's for equal heads (so that no device that
  /// shows it writes the file again), else the latest head's.
  let contentTime: Int64?

  /// What merging the heads' contents gave.
  public enum Outcome: Hashable, Sendable {
    /// No overlapping change (or a union merge): these bytes resolve the conflict.
    case merged([UInt8])
    /// A `merge=text` merge found this many overlapping changes: the conflict stays.
    case overlapping(Int)
    /// A head or an ancestor is not text docsync merges (``ThreeWayMerge/isMergeableText(_:)``).
    case notText
    /// Some content was not given.
    case missingContent
  }

  /// The merge of the document at `path`, when `policy` asks for one and the document is in
  /// conflict between file versions only, none larger than ``ThreeWayMerge/maximumBytes``.
  public static func plan(
    at path: DocumentPath, in set: VersionSet, state: LibraryState, policy: MergePolicy
  ) -> AutoMerge? {
    guard policy != .manual, case .document? = state.entries[path],
      state.conflicts[path] != nil
    else { return nil }
    let winnerFirst = set.heads(at: path)
    guard winnerFirst.count > 1 else { return nil }
    for head in winnerFirst {
      guard case .file(_, let size, _) = head.content, size <= ThreeWayMerge.maximumBytes else {
        return nil
      }
    }
    guard case .file(_, _, let executable) = winnerFirst[0].content else { return nil }
    let heads = winnerFirst.sorted { $0.id < $1.id }
    var bases: [VersionRecord?] = []
    for k in heads.indices.dropFirst() {
      let candidates = heads[..<k].compactMap {
        set.nearestCommonAncestor(of: [$0.id, heads[k].id])
      }
      bases.append(candidates.max { ($0.modified, $0.id) < ($1.modified, $1.id) })
    }
    return AutoMerge(
      path: path, policy: policy, heads: heads, bases: bases, executable: executable,
      sameContent: nil, contentTime: heads.compactMap(\.contentTime).max())
  }

  /// The merge of the heads of `path` whose content is equal (the same bytes and executable
  /// bit, two folders, two deletions), whatever `.docsyncattributes` says: two devices that
  /// saved the same bytes (one download, one script, one git object) made one version, which
  /// a person should never have to resolve. The merge follows them, so that history is one
  /// line again; a head with other content stays a head beside it. Where several groups of
  /// heads are equal, the group of the best head (by the winner rule) is merged first.
  public static func sameContent(at path: DocumentPath, in set: VersionSet) -> AutoMerge? {
    let winnerFirst = set.heads(at: path)
    guard winnerFirst.count > 1 else { return nil }
    var groups: [VersionContent: [VersionRecord]] = [:]
    for head in winnerFirst { groups[head.content, default: []].append(head) }
    guard let best = winnerFirst.first(where: { groups[$0.content]!.count > 1 }) else {
      return nil
    }
    let equal = groups[best.content]!
    var executable = false
    if case .file(_, _, let bit) = best.content { executable = bit }
    return AutoMerge(
      path: path, policy: .manual, heads: equal.sorted { $0.id < $1.id }, bases: [],
      executable: executable, sameContent: best.content, contentTime: best.contentTime)
  }

  /// The content hashes `merge` reads: every head's and every file ancestor's; none when the
  /// heads are equal.
  public var neededContent: Set<ContentHash> {
    guard sameContent == nil else { return [] }
    var needed = Set(heads.compactMap(\.content.blobHash))
    for case let base? in bases {
      if case .file(let hash, _, _) = base.content { needed.insert(hash) }
    }
    return needed
  }

  /// Merges the heads pairwise in id order, each over its base; an ancestor that is not a file
  /// (the document did not exist there) counts as empty, so everything is an addition.
  ///
  /// Equal heads need no merging: ask ``sameContent`` and ``record(content:)`` instead.
  public func merge(contents: [ContentHash: [UInt8]]) -> Outcome {
    precondition(sameContent == nil, "equal heads are not merged by their bytes")
    func text(_ record: VersionRecord?) -> [UInt8]?? {
      guard let record, case .file(let hash, _, _) = record.content else { return .some([]) }
      guard let bytes = contents[hash] else { return nil }
      return .some(ThreeWayMerge.isMergeableText(bytes) ? bytes : nil)
    }
    guard case .some(let first) = text(heads[0]) else { return .missingContent }
    guard var merged = first else { return .notText }
    for (head, base) in zip(heads.dropFirst(), bases) {
      guard case .some(let other) = text(head), case .some(let ancestor) = text(base) else {
        return .missingContent
      }
      guard let other, let ancestor else { return .notText }
      // Labels are never shown: a text merge with an overlap is not used.
      let overlap: ThreeWayMerge.Overlap =
        policy == .union ? .union : .markers(current: "", base: "", other: "")
      let result = ThreeWayMerge.merge(
        base: ancestor, current: merged, other: other, overlap: overlap)
      if policy == .text && result.overlaps > 0 { return .overlapping(result.overlaps) }
      merged = result.bytes
    }
    return .merged(merged)
  }

  /// The merge record for merged content `hash` of `size` bytes: a function of the heads only,
  /// and of `chunks`, the merged content's chunk root, which every device cuts alike from the
  /// same bytes.
  public func record(hash: ContentHash, size: UInt64, chunks: ContentRoot? = nil)
    -> VersionRecord
  {
    record(content: .file(hash: hash, size: size, executable: executable), chunks: chunks)
  }

  /// The merge record with `content` (``sameContent`` for equal heads): a function of the
  /// heads only.
  ///
  /// Its time is one logical tick after the latest head, not this device's clock: later than
  /// every parent, as a hybrid clock makes a version, and the same on every device. Its
  /// content time is the latest head's, so the file shows when its newest edit was made (for
  /// equal heads, the best head's: what every device shows already).
  public func record(content: VersionContent, chunks: ContentRoot? = nil) -> VersionRecord {
    let latest = heads.map(\.modified).max()!
    let modified =
      latest.counter < UInt32.max
      ? HLCTimestamp(wallMilliseconds: latest.wallMilliseconds, counter: latest.counter + 1)
      : HLCTimestamp(wallMilliseconds: latest.wallMilliseconds + 1)
    return VersionRecord(
      path: path, content: content, parents: heads.map(\.id), modified: modified,
      deviceID: Self.deviceID, deviceName: Self.deviceName,
      contentTime: content.blobHash == nil ? nil : contentTime, chunks: chunks)
  }

  /// The key of the heads this merge follows: when it changes, the merge is decided again.
  public var headIDs: [VersionID] { heads.map(\.id) }
}
