import Synchronization

/// Whether a SQLite hub instance converts blobs in the background: never unless a mount asked
/// (tests and tools open hubs whose blobs must stay as they put them), and one loop at most.
final class TwinSchedule: Sendable {
  private let started = Mutex(false)

  /// True once, for the caller that starts the loop.
  func start() -> Bool {
    started.withLock { started in
      defer { started = true }
      return !started
    }
  }
}
