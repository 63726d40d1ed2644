import Testing

@testable import SyncEngine

/// When a path whose content could not be read is tried again.
@Suite("Retrying a path that could not be recorded")
struct RecordRetryTests {
  @Test func theWaitDoublesUpToAMinute() {
    var retry = RecordRetry(reason: "No space left on device", at: 1_000)
    #expect(retry.retryAt == 1_500)
    var delays: [UInt64] = []
    for attempt in 1...10 {
      retry = retry.failedAgain(reason: "No space left on device", at: 1_000 * UInt64(attempt))
      delays.append(retry.delay)
    }
    #expect(delays == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000])
    #expect(retry.attemptedAt == 10_000 && retry.retryAt == 70_000)
  }

  @Test func itWaitsUntilItsTimeOrASyncAskedForSinceTheLastAttempt() {
    let retry = RecordRetry(reason: "Too many open files", at: 10_000)
    #expect(retry.holdsBack(at: 10_100, syncAskedAt: nil))
    #expect(!retry.holdsBack(at: 10_500, syncAskedAt: nil))
    // A sync asked for before the failed attempt has had its try.
    #expect(retry.holdsBack(at: 10_100, syncAskedAt: 9_000))
    #expect(!retry.holdsBack(at: 10_100, syncAskedAt: 10_050))
  }
}
