/// A path whose content could not be read or copied for upload (a full disk, no descriptor
/// left, a damaged working file): its operations wait in the change log and are tried again
/// later, less often the longer it lasts. Recording the path as it stood would have published
/// a deletion, since nothing could be said of what it holds.
struct RecordRetry: Sendable {
  /// The error of the last attempt, for the log and for `docsync sync`.
  var reason: String
  /// When the last attempt failed, in monotonic milliseconds: the next waits from here.
  var attemptedAt: UInt64
  /// When the last attempt began (it may have hashed for a while before it failed): a sync
  /// asked for since then has not had its try.
  var began: UInt64
  /// How long after it the next attempt comes.
  var delay: UInt64

  static let firstDelay: UInt64 = 500
  static let longestDelay: UInt64 = 60_000

  var retryAt: UInt64 { attemptedAt + delay }

  /// The first failure of a path at `now`, of an attempt that began at `began`.
  init(reason: String, at now: UInt64, began: UInt64) {
    self.reason = reason
    attemptedAt = now
    self.began = min(began, now)
    delay = Self.firstDelay
  }

  /// One more failure, at `now`, of an attempt that began at `began`: the wait doubles, up to
  /// a minute.
  func failedAgain(reason: String, at now: UInt64, began: UInt64) -> RecordRetry {
    var next = self
    next.reason = reason
    next.attemptedAt = now
    next.began = min(began, now)
    next.delay = min(delay * 2, Self.longestDelay)
    return next
  }

  /// Whether the path's operations wait at `now`: not once its time has come, and not for a
  /// sync asked for after the last attempt began (a person who freed space and runs `docsync
  /// sync` expects it tried now), which tries it once.
  func holdsBack(at now: UInt64, syncAskedAt: UInt64?) -> Bool {
    if now >= retryAt { return false }
    if let syncAskedAt, syncAskedAt > began { return false }
    return true
  }
}
