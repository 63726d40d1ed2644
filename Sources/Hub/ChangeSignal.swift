import Synchronization

/// A counter that wakes async waiters when it moves.
///
/// A waiter reads ``generation`` before it looks at what it waits for, then waits for the
/// generation to pass what it read: a signal sent in between is not missed, and many signals while
/// nobody waits cost one increment each.
public final class ChangeSignal: Sendable {
  private struct State {
    var generation = 0
    var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    var nextWaiter = 0
  }
  private let state = Mutex(State())

  public init() {}

  public var generation: Int { state.withLock { $0.generation } }

  public func signal() {
    let waiters = state.withLock { state in
      state.generation += 1
      defer { state.waiters = [:] }
      return Array(state.waiters.values)
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Returns once the generation passes `seen`, or after `timeout`, or on cancellation.
  ///
  /// The timer is a child task, so it runs where the caller runs (the sync engine's own thread):
  /// an unstructured timer task would need the shared cooperative pool, and a pool kept busy by
  /// blocking work (a test suite, at least) would hold the wake-up back indefinitely. It sleeps
  /// on ``MonotonicTimer``, which a wall clock hours off cannot stretch.
  public func wait(after seen: Int, timeout: Duration) async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await MonotonicTimer.shared.sleep(for: timeout) }
      group.addTask { await self.signalled(after: seen) }
      _ = await group.next()
      group.cancelAll()
    }
  }

  private func signalled(after seen: Int) async {
    let id = state.withLock { state in
      state.nextWaiter += 1
      return state.nextWaiter
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let now = state.withLock { state -> Bool in
          if state.generation != seen || Task.isCancelled { return true }
          state.waiters[id] = continuation
          return false
        }
        if now { continuation.resume() }
      }
    } onCancel: {
      self.resume(id)
    }
  }

  private func resume(_ id: Int) {
    let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
    waiter?.resume()
  }
}
