import Synchronization

/// Runs work that a library below may never finish, and stops waiting for it once a watch says
/// it cannot finish any more.
///
/// A PostgreSQL server that shut down while a device waited for its answer left the device's
/// sync loop waiting for good (seen once in CI, with no connection left open): no error came
/// back from postgres-nio, so the mount never went offline, never retried, and could not be
/// unmounted. The connection's own state tells that no answer can come; this turns that into
/// an error the sync engine already knows how to handle.
///
/// The work runs in a task of its own on Swift's shared threads (as the PostgreSQL hub's idle
/// look for changes already did), which the caller's cancellation reaches; work that is given
/// up on is cancelled and left to end whenever it does.
public enum WatchedWork {
  /// The result of `work`, or `failure()` once `cannotFinish()` has held at `strikes`
  /// consecutive looks, `interval` apart.
  public static func run<T: Sendable>(
    lookingEvery interval: Duration = .milliseconds(500), strikes: Int = 3,
    cannotFinish: @escaping @Sendable () -> Bool,
    failure: @escaping @Sendable () -> any Error,
    _ work: @escaping @Sendable () async throws -> T
  ) async throws -> T {
    let outcome = Outcome<T>()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        outcome.start(continuation)
        let watch = Task {
          var held = 0
          while !Task.isCancelled && !outcome.isFinished {
            await MonotonicTimer.shared.sleep(for: interval)
            held = cannotFinish() ? held + 1 : 0
            if held >= strikes {
              outcome.finish(.failure(failure()))
              return
            }
          }
        }
        let worker = Task {
          let result: Result<T, any Error>
          do {
            result = .success(try await work())
          } catch {
            result = .failure(error)
          }
          outcome.finish(result)
          watch.cancel()
        }
        outcome.hold(worker)
      }
    } onCancel: {
      outcome.cancelWork()
    }
  }

  /// The one answer the caller gets, from the work or from the watch, whichever comes first.
  private final class Outcome<T: Sendable>: Sendable {
    private struct State {
      var continuation: CheckedContinuation<T, any Error>?
      var finished = false
      var cancelled = false
      var worker: Task<Void, Never>?
    }
    private let state = Mutex(State())

    var isFinished: Bool { state.withLock { $0.finished } }

    func start(_ continuation: CheckedContinuation<T, any Error>) {
      state.withLock { $0.continuation = continuation }
    }

    func hold(_ worker: Task<Void, Never>) {
      let cancel = state.withLock { state -> Bool in
        state.worker = worker
        return state.cancelled || state.finished
      }
      if cancel { worker.cancel() }
    }

    func finish(_ result: Result<T, any Error>) {
      let (continuation, worker) = state.withLock { state in
        defer {
          state.continuation = nil
          state.finished = true
        }
        return (state.continuation, state.worker)
      }
      guard let continuation else { return }
      continuation.resume(with: result)
      // Given up on: whatever it still waits for, nobody waits for it.
      if case .failure = result { worker?.cancel() }
    }

    func cancelWork() {
      let worker = state.withLock { state in
        state.cancelled = true
        return state.worker
      }
      worker?.cancel()
    }
  }
}
