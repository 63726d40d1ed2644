import Glibc
import Synchronization

/// The recent events of one mount, for any number of readers that each wait for the next.
///
/// Posting never waits for a reader: a reader too slow for `capacity` events misses the oldest
/// and learns it from the gap in sequence numbers.
public final class EventLog: Sendable {
  private struct State {
    var events: [EngineEvent] = []
    var next: UInt64 = 1
    var closed = false
  }

  private let state = Mutex(State())
  private let capacity: Int
  // A condition variable has no timeout here, so no clock is involved: a reader waits until an
  // event or `close`, which is what a stream to a script wants.
  private nonisolated(unsafe) let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(
    capacity: 1)
  private nonisolated(unsafe) let conditionMutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(
    capacity: 1)

  public init(capacity: Int = 1024) {
    self.capacity = capacity
    pthread_cond_init(condition, nil)
    pthread_mutex_init(conditionMutex, nil)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(conditionMutex)
    condition.deallocate()
    conditionMutex.deallocate()
  }

  /// Records `kind` as happening at `time` (wall milliseconds) and wakes every reader.
  @discardableResult
  public func post(_ kind: EngineEvent.Kind, time: UInt64) -> EngineEvent {
    let event = state.withLock { state in
      let event = EngineEvent(sequence: state.next, time: time, kind: kind)
      state.next += 1
      state.events.append(event)
      if state.events.count > capacity { state.events.removeFirst(state.events.count - capacity) }
      return event
    }
    wakeReaders()
    return event
  }

  /// The sequence number of the newest event, 0 before the first: a reader that starts now
  /// waits for events after it.
  public var latest: UInt64 { state.withLock { $0.next - 1 } }

  /// The events after `sequence` that are still kept, without waiting.
  public func events(after sequence: UInt64) -> [EngineEvent] {
    state.withLock { state in Array(state.events.drop { $0.sequence <= sequence }) }
  }

  /// The events after `sequence`, waiting until there is one; empty once the log is closed.
  public func wait(after sequence: UInt64) -> [EngineEvent] {
    pthread_mutex_lock(conditionMutex)
    defer { pthread_mutex_unlock(conditionMutex) }
    while true {
      let (events, closed) = state.withLock { state in
        (Array(state.events.drop { $0.sequence <= sequence }), state.closed)
      }
      if !events.isEmpty || closed { return events }
      pthread_cond_wait(condition, conditionMutex)
    }
  }

  /// Ends every wait: the mount is stopping.
  public func close() {
    state.withLock { $0.closed = true }
    wakeReaders()
  }

  private func wakeReaders() {
    // Taking the mutex orders this wake after a reader's check of the state, so none is lost.
    pthread_mutex_lock(conditionMutex)
    pthread_cond_broadcast(condition)
    pthread_mutex_unlock(conditionMutex)
  }
}
