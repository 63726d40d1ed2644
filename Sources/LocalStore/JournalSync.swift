import Glibc

/// Flushes the state database's journal (its WAL file) to the disk on a thread of its own, so
/// that an `fsync` can flush the working file and the journal at the same time.
///
/// An `fsync` on the mount needs two disk flushes: the working file's and the journal's (the
/// names and attributes made before it). One after the other, an atomic save (write a temporary
/// file, fsync, rename it over) cost about twice a local disk's fsync; side by side the disk
/// works on both at once. Callers that ask while a flush runs share the next one.
final class JournalSync: @unchecked Sendable {
  private let descriptor: Int32
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  /// Tickets handed out: each one asks for a flush that starts after it was handed out.
  private var requested: UInt64 = 0
  /// The last ticket that a flush running now (or finished) covers.
  private var started: UInt64 = 0
  /// The last ticket whose flush has finished.
  private var completed: UInt64 = 0
  /// The last ticket whose flush failed.
  private var failed: UInt64 = 0
  private var stopped = false

  /// `descriptor` is the open journal, which this type does not close.
  init(descriptor: Int32) {
    self.descriptor = descriptor
    pthread_mutex_init(mutex, nil)
    pthread_cond_init(condition, nil)
    let context = Unmanaged.passRetained(self)
    var thread = pthread_t()
    pthread_create(
      &thread, nil,
      { argument in
        let sync = Unmanaged<JournalSync>.fromOpaque(argument!).takeRetainedValue()
        sync.serve()
        return nil
      }, context.toOpaque())
    pthread_detach(thread)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  /// Asks for a flush of everything written to the journal so far; ``wait(_:)`` on the ticket.
  func request() -> UInt64 {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    requested += 1
    pthread_cond_broadcast(condition)
    return requested
  }

  /// Returns once the flush that `ticket` asked for has finished: whether it succeeded.
  @discardableResult
  func wait(_ ticket: UInt64) -> Bool {
    pthread_mutex_lock(mutex)
    while completed < ticket && !stopped { pthread_cond_wait(condition, mutex) }
    let done = completed >= ticket
    let succeeded = failed < ticket
    pthread_mutex_unlock(mutex)
    // After stop the thread is gone: the caller flushes for itself.
    if !done { return fdatasync(descriptor) == 0 }
    return succeeded
  }

  /// Ends the thread once it has finished the flush it is in, if any.
  func stop() {
    pthread_mutex_lock(mutex)
    stopped = true
    pthread_cond_broadcast(condition)
    pthread_mutex_unlock(mutex)
  }

  private func serve() {
    pthread_mutex_lock(mutex)
    while true {
      while started == requested && !stopped { pthread_cond_wait(condition, mutex) }
      if stopped {
        pthread_mutex_unlock(mutex)
        return
      }
      let target = requested
      started = target
      pthread_mutex_unlock(mutex)
      let status = fdatasync(descriptor)
      pthread_mutex_lock(mutex)
      if status != 0 { failed = target }
      completed = target
      pthread_cond_broadcast(condition)
    }
  }
}
