import Testing

@testable import SyncEngine

/// When a path whose content could not be read is tried again.
@Suite("Retrying a path that could not be recorded")
struct RecordRetryTests {
  @Test func theWaitDoublesUpToAMinute() {
    var retry = RecordRetry(reason: "No space left on device", at: 1_000, began: 900)
    #expect(retry.retryAt == 1_500)
    var delays: [UInt64] = []
    for attempt in 1...10 {
      retry = retry.failedAgain(
        reason: "No space left on device", at: 1_000 * UInt64(attempt),
        began: 1_000 * UInt64(attempt))
      delays.append(retry.delay)
    }
    #expect(delays == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000])
    #expect(retry.attemptedAt == 10_000 && retry.retryAt == 70_000)
  }

  @Test func itWaitsUntilItsTimeOrASyncAskedForSinceTheLastAttempt() {
    let retry = RecordRetry(reason: "Too many open files", at: 10_000, began: 9_800)
    #expect(retry.holdsBack(at: 10_100, syncAskedAt: nil))
    #expect(!retry.holdsBack(at: 10_500, syncAskedAt: nil))
    // A sync asked for before the failed attempt began has had its try.
    #expect(retry.holdsBack(at: 10_100, syncAskedAt: 9_000))
    #expect(!retry.holdsBack(at: 10_100, syncAskedAt: 10_050))
    // One asked for while the attempt ran (the cause may have been mended meanwhile) has not.
    #expect(!retry.holdsBack(at: 10_100, syncAskedAt: 9_900))
  }

  /// The wait counts from the failure, however long the attempt took: a window that hashed
  /// for half a minute before it failed does not start again at once.
  @Test func theWaitCountsFromTheFailureNotFromTheStartOfTheAttempt() {
    let retry = RecordRetry(reason: "Input/output error", at: 40_000, began: 10_000)
    #expect(retry.retryAt == 40_500)
    #expect(retry.holdsBack(at: 40_100, syncAskedAt: nil))
    let again = retry.failedAgain(reason: "Input/output error", at: 80_000, began: 50_000)
    #expect(again.retryAt == 81_000 && again.began == 50_000)
  }
}
