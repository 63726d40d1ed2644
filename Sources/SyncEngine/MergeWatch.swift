import DocumentModel

/// Which documents in conflict the engine merges by itself, and when: the library's
/// `.docsyncattributes`, the heads each candidate has shown since when, and the heads already
/// judged not to merge. Pure bookkeeping; the engine holds it under its lock.
///
/// A merge waits until its heads have stayed the same for a settle time. Devices that come
/// back online together each push their edit and then pull; the first to pull sees only some
/// of the others' edits. Merging at once would make a record of that partial set, a different
/// one on each device, to be merged again. Waiting a moment lets every device see every head
/// and make the one same record.
struct MergeWatch {
  private(set) var attributes = MergeAttributes.none
  /// The version of `.docsyncattributes` that `attributes` were read from.
  private(set) var attributesSource: VersionID?
  /// The heads of each candidate as first seen, and when (monotonic milliseconds).
  private var seen: [DocumentPath: (heads: [VersionID], since: UInt64)] = [:]
  /// Heads that gave no merge (an overlap, not text): not tried again until they change.
  private var decided: [DocumentPath: [VersionID]] = [:]

  /// The merges whose heads have settled, and how long until the next one will have
  /// (milliseconds; nil when none waits). Forgets paths that are no longer `candidates`.
  mutating func due(
    _ plans: [AutoMerge], candidates: Set<DocumentPath>, now: UInt64, settle: UInt64
  ) -> (due: [AutoMerge], wakeIn: UInt64?) {
    let paths = Set(plans.map(\.path))
    seen = seen.filter { paths.contains($0.key) }
    decided = decided.filter { candidates.contains($0.key) }
    var due: [AutoMerge] = []
    var wakeIn: UInt64?
    for plan in plans where decided[plan.path] != plan.headIDs {
      guard let first = seen[plan.path], first.heads == plan.headIDs else {
        seen[plan.path] = (plan.headIDs, now)
        wakeIn = min(wakeIn ?? settle, settle)
        continue
      }
      let waited = now >= first.since ? now - first.since : 0
      if waited >= settle {
        due.append(plan)
      } else {
        wakeIn = min(wakeIn ?? settle, settle - waited)
      }
    }
    return (due, wakeIn)
  }

  /// Uses the attributes of version `source` of `.docsyncattributes` (nil: there is none).
  /// Heads that gave no merge under the old ones may merge under these (`merge=union` where
  /// `merge=text` found an overlap): they are judged again.
  mutating func adopt(_ attributes: MergeAttributes, from source: VersionID?) {
    self.attributes = attributes
    attributesSource = source
    decided = [:]
  }

  /// Whether `heads` (sorted) of `path` already gave no merge.
  func isJudged(_ path: DocumentPath, heads: [VersionID]) -> Bool {
    decided[path] == heads
  }

  /// Remembers that `plan`'s heads gave no merge.
  mutating func judged(_ plan: AutoMerge) {
    decided[plan.path] = plan.headIDs
  }
}
