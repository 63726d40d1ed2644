import DocumentModel

/// Merging documents in conflict: the merged views people may copy over a document, the
/// automatic merges waiting for their heads to settle, when the next one is due, and the
/// conflicts whose merge bases were made sure of. Pure: no I/O, no lock of its own.
///
/// Facts that must agree, kept together by the mutating methods:
/// - `wakeIn` is the wait until the earliest merge that waits is due, as of the last
///   ``due(_:candidates:now:settle:)``; nil when none waits.
/// - A merged view is taken as chosen only for the exact heads it was made from and its exact
///   bytes (``choosesMergedView(at:hash:heads:)``).
struct MergeState {
  /// The merged views people may copy over a document, by path: the heads each was made from
  /// and its content's hash (see `noteMergedView`).
  private(set) var mergedViews: [DocumentPath: (heads: [VersionID], hash: ContentHash)] = [:]
  /// Automatic merging: the attributes, and which merges wait for their heads to settle.
  var merging = MergeWatch()
  /// How long until a waiting merge is due (milliseconds), for the loop's sleep.
  private(set) var wakeIn: UInt64?
  /// The conflicts whose merge bases ``SyncEngine/fetchMergeBases()`` last made sure of.
  var conflictsWithBases: [DocumentPath: [VersionRecord]] = [:]

  /// The merges of `plans` whose heads have settled at `now`; the wait for the next one is
  /// kept in `wakeIn`.
  mutating func due(
    _ plans: [AutoMerge], candidates: Set<DocumentPath>, now: UInt64, settle: UInt64
  ) -> [AutoMerge] {
    let (due, wakeIn) = merging.due(plans, candidates: candidates, now: now, settle: settle)
    self.wakeIn = wakeIn
    return due
  }

  /// Notes the view `.versions/<path>/merged<ext>` as made from `heads`, with content `hash`.
  mutating func noteMergedView(at path: DocumentPath, heads: [VersionID], hash: ContentHash) {
    mergedViews[path] = (heads, hash)
  }

  /// Whether writing content `hash` over `path`, whose heads are `heads`, chooses the merged
  /// view shown for it: same bytes, made from the same heads.
  func choosesMergedView(at path: DocumentPath, hash: ContentHash, heads: [VersionID]) -> Bool {
    guard let view = mergedViews[path], view.hash == hash else { return false }
    return Set(view.heads) == Set(heads)
  }

  /// The versions of `path` are gone: its merged view means nothing any more.
  mutating func forgetMergedView(at path: DocumentPath) {
    mergedViews[path] = nil
  }
}
