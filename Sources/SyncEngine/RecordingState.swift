import DocumentModel

/// Local changes on their way to becoming versions: the paths of the window being hashed, the
/// paths whose content could not be read and when each is tried again, and the rules of what
/// never syncs. Pure: no I/O, no lock of its own.
///
/// Facts that must agree, kept together by the mutating methods:
/// - A path is recording from ``begin(_:)`` to ``end(_:)`` of its window, whatever the
///   window's outcome: remote changes to it wait meanwhile, and never wait for good.
/// - A path is unrecordable from its failed read until a window records it
///   (``recorded(_:)``); each failure of the same path waits twice as long as the last.
struct RecordingState {
  /// Paths of a window whose files are being hashed, outside the lock.
  private(set) var recording: Set<DocumentPath> = []
  /// Paths whose content could not be read or copied for upload, and when to try again.
  private(set) var unrecordable: [DocumentPath: RecordRetry] = [:]
  /// What never syncs: the built-in names and the current `.docsyncignore`.
  private(set) var ignore = IgnoreRules.builtIn

  /// A window starts hashing `coverage`.
  mutating func begin(_ coverage: Set<DocumentPath>) {
    recording.formUnion(coverage)
  }

  /// The window that covered `coverage` is over (recorded, held back or failed).
  mutating func end(_ coverage: Set<DocumentPath>) {
    recording.subtract(coverage)
  }

  /// Whether a remote change to `path` must wait for a window.
  func isRecording(_ path: DocumentPath) -> Bool { recording.contains(path) }

  /// `path` could not be read (`reason`) by a window that began at `began`, noted at `now`:
  /// returns when it is tried again.
  mutating func failed(_ path: DocumentPath, reason: String, at now: UInt64, began: UInt64)
    -> RecordRetry
  {
    let retry =
      unrecordable[path]?.failedAgain(reason: reason, at: now, began: began)
      ?? RecordRetry(reason: reason, at: now, began: began)
    unrecordable[path] = retry
    return retry
  }

  /// A window recorded `coverage`: what could not be read there can now. Returns whether a
  /// path stopped being unrecordable.
  mutating func recorded(_ coverage: Set<DocumentPath>) -> Bool {
    guard !unrecordable.isEmpty else { return false }
    let before = unrecordable.count
    for path in coverage { unrecordable[path] = nil }
    return unrecordable.count != before
  }

  /// The paths among `paths` whose next try has not come at `now` (see
  /// ``RecordRetry/holdsBack(at:syncAskedAt:)``).
  func heldBack(_ paths: Set<DocumentPath>, at now: UInt64, syncAskedAt: UInt64?)
    -> Set<DocumentPath>
  {
    guard !unrecordable.isEmpty else { return [] }
    return paths.filter {
      unrecordable[$0]?.holdsBack(at: now, syncAskedAt: syncAskedAt) == true
    }
  }

  /// Why the first unrecordable path (in path order) could not be read, in one line.
  var firstFailure: String? {
    unrecordable.min { $0.key < $1.key }.map {
      "cannot read \($0.key) to sync it: \($0.value.reason)"
    }
  }

  /// The paths whose content could not be read for upload in an attempt that began at or after
  /// `since` (monotonic milliseconds), and why, in one line; nil when there are none.
  func report(since: UInt64) -> String? {
    let failed = unrecordable.filter { $0.value.began >= since }.sorted { $0.key < $1.key }
    guard !failed.isEmpty else { return nil }
    let named = failed.prefix(3).map { "\($0.key) (\($0.value.reason))" }
    let more = failed.count > 3 ? " and \(failed.count - 3) more" : ""
    return "cannot read \(named.joined(separator: ", "))\(more) to sync it; trying again"
  }

  /// Switches to `rules`; returns the rules before, or nil when they were these already.
  mutating func adopt(_ rules: IgnoreRules) -> IgnoreRules? {
    guard rules != ignore else { return nil }
    defer { ignore = rules }
    return ignore
  }
}
