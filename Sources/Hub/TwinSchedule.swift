import Synchronization

/// When a SQLite hub converts blobs into twins in the background: never unless a mount asked
/// (tests and tools open hubs whose blobs must stay as they put them), then one run at a time,
/// and a run more when blobs arrived during one.
final class TwinSchedule: Sendable {
  private struct State {
    var arrivalDelay = Duration.seconds(60)
    var enabled = false
    var running = false
    var again = false
  }
  private let state = Mutex(State())

  /// How long after blobs arrive a run starts.
  var arrivalDelay: Duration { state.withLock { $0.arrivalDelay } }

  /// Turns background conversion on, runs starting `arrivalDelay` after blobs arrive; true
  /// when the caller starts the first run.
  func enable(arrivalDelay: Duration) -> Bool {
    state.withLock { state in
      guard !state.enabled else { return false }
      state.arrivalDelay = arrivalDelay
      state.enabled = true
      state.running = true
      return true
    }
  }

  /// Blobs arrived: true when the caller starts a run, false when none is wanted (not enabled)
  /// or one is running (it goes on once more at its end).
  func poke() -> Bool {
    state.withLock { state in
      guard state.enabled else { return false }
      if state.running {
        state.again = true
        return false
      }
      state.running = true
      return true
    }
  }

  /// A run ended: true when it should go on once more.
  func finish() -> Bool {
    state.withLock { state in
      if state.again {
        state.again = false
        return true
      }
      state.running = false
      return false
    }
  }
}
