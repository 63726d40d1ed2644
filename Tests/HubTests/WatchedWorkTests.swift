import Foundation
import Synchronization
import Testing

@testable import Hub

/// Waiting for a library's answer that can no longer come (a connection the server closed)
/// ends in an error the sync engine handles, instead of waiting for good; work that can finish
/// is never cut short.
@Suite("Work given up once it cannot finish")
struct WatchedWorkTests {
  struct Gone: Error, Equatable {}
  final class Flag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
  }
  struct Refused: Error, Equatable {}

  /// Work that ignores cancellation and waits until the test lets it go.
  final class Stuck: Sendable {
    private let waiting = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let released = Mutex(false)

    func wait() async {
      await withCheckedContinuation { continuation in
        let now = released.withLock { released -> Bool in
          if !released { waiting.withLock { $0 = continuation } }
          return released
        }
        if now { continuation.resume() }
      }
    }

    func release() {
      released.withLock { $0 = true }
      waiting.withLock { waiting in
        defer { waiting = nil }
        return waiting
      }?.resume()
    }
  }

  @Test func workThatCannotFinishEndsInTheFailureSoonAfterTheWatchSeesIt() async throws {
    let stuck = Stuck()
    let closed = Flag()
    let start = ContinuousClock.now
    Task {
      try await Task.sleep(for: .milliseconds(300))
      closed.set()
    }
    await #expect(throws: Gone.self) {
      try await WatchedWork.run(
        lookingEvery: .milliseconds(100), strikes: 3,
        cannotFinish: { closed.isSet }, failure: { Gone() }
      ) {
        await stuck.wait()
        return 1
      }
    }
    // Not before the watch saw it three times. How soon after depends on how busy Swift's
    // shared threads are (in this suite, very): no upper bound is asserted.
    #expect(ContinuousClock.now - start >= .milliseconds(500))
    stuck.release()
  }

  @Test func workThatFinishesIsNeverCutShort() async throws {
    let value = try await WatchedWork.run(
      lookingEvery: .milliseconds(50), strikes: 2, cannotFinish: { false },
      failure: { Gone() }
    ) {
      try await Task.sleep(for: .milliseconds(400))
      return 42
    }
    #expect(value == 42)
    // Its own error comes back as it is; a watch that would give up is too late for it.
    await #expect(throws: Refused.self) {
      try await WatchedWork.run(
        lookingEvery: .milliseconds(200), strikes: 3, cannotFinish: { true },
        failure: { Gone() }
      ) { () async throws -> Int in throw Refused() }
    }
  }

  @Test func theCallersCancellationReachesTheWork() async throws {
    let reached = Flag()
    let call = Task {
      try await WatchedWork.run(cannotFinish: { false }, failure: { Gone() }) {
        () async throws -> Int in
        do {
          try await Task.sleep(for: .seconds(60))
        } catch {
          reached.set()
          throw error
        }
        return 0
      }
    }
    try await Task.sleep(for: .milliseconds(100))
    call.cancel()
    await #expect(throws: CancellationError.self) { try await call.value }
    #expect(reached.isSet)
  }
}
