import Glibc

/// Tree changes accepted but not yet committed, grouped so that many of them share one commit.
///
/// A create, `setattr` or rename used to commit its own transaction while the tree's lock was
/// held, so every metadata request waited for SQLite. Now the request only queues its changes;
/// they are committed, in the order they were queued, by whichever comes first: the next write
/// of anything else to the state database (so the database never sees a later change before an
/// earlier one), a flush (`fsync`, `fsyncdir`, unmount, the engine's durability points), or a
/// thread of the queue's own once the oldest change has waited ``window``. A crash loses at most
/// that window of changes nobody asked to be durable, as a crash of a local disk's cache does;
/// each operation's changes still commit all together or not at all.
final class CommitQueue: @unchecked Sendable {
  /// A group of changes taken for one transaction.
  struct Batch {
    var changes: [Change] = []
    /// Working files to remove once the changes that dropped their inodes are committed: a
    /// crash in between must not leave a committed inode without its file.
    var removals: [UInt64] = []
    var isEmpty: Bool { changes.isEmpty && removals.isEmpty }
  }

  /// How long a change may wait for its commit when nothing else commits it sooner.
  static let window: Duration = .milliseconds(5)

  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  private var pending = Batch()
  /// CLOCK_MONOTONIC nanoseconds at which the oldest pending change was queued.
  private var oldest: Int64 = 0
  private var stopped = false
  /// The last commit's failure, until a commit succeeds again.
  private(set) var failure: String?

  init() {
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(wake, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(wake)
    pthread_mutex_destroy(mutex)
    wake.deallocate()
    mutex.deallocate()
  }

  /// Starts the thread that commits what waited a whole window, through `commit` (which takes
  /// the pending batch itself); it ends when `commit` returns false (the store is gone) or at
  /// ``stop()``.
  func startCommitting(_ commit: @escaping @Sendable () -> Bool) {
    let context = Unmanaged.passRetained(Committer(queue: self, commit: commit))
    var thread = pthread_t()
    pthread_create(
      &thread, nil,
      { argument in
        let committer = Unmanaged<Committer>.fromOpaque(argument!).takeRetainedValue()
        committer.queue.serve(committer.commit)
        return nil
      }, context.toOpaque())
    pthread_detach(thread)
  }

  /// Queues one operation's changes.
  func add(_ changes: [Change]) {
    queue { $0.changes += changes }
  }

  /// Queues the removal of an inode's working file, after everything queued before it.
  func addRemoval(_ inode: UInt64) {
    queue { $0.removals.append(inode) }
  }

  /// Queues removals whose inodes' records are committed already, for the next commit to do.
  func addRemovals(_ inodes: [UInt64]) {
    queue { $0.removals += inodes }
  }

  /// Adds to the pending batch, starting the window when it was empty.
  private func queue(_ update: (inout Batch) -> Void) {
    locked {
      if pending.isEmpty {
        oldest = Self.now()
        pthread_cond_signal(wake)
      }
      update(&pending)
    }
  }

  var hasPending: Bool { locked { !pending.isEmpty } }

  /// Takes everything pending, for a transaction that is about to commit it.
  func take() -> Batch {
    locked {
      let batch = pending
      pending = Batch()
      return batch
    }
  }

  /// Puts back a batch whose transaction failed, ahead of what was queued since.
  func putBack(_ batch: Batch, failure: String) {
    locked {
      if pending.isEmpty { oldest = Self.now() }
      pending.changes = batch.changes + pending.changes
      pending.removals = batch.removals + pending.removals
      self.failure = failure
    }
  }

  /// Notes that a transaction committed (the failure, if any, is over).
  func committed() {
    locked { failure = nil }
  }

  /// Ends the committing thread.
  func stop() {
    locked {
      stopped = true
      pthread_cond_signal(wake)
    }
  }

  private func serve(_ commit: () -> Bool) {
    while true {
      pthread_mutex_lock(mutex)
      while pending.isEmpty && !stopped { pthread_cond_wait(wake, mutex) }
      // Wait out the rest of the oldest change's window, unless a flush takes it sooner.
      while !pending.isEmpty && !stopped {
        let due = oldest + Int64(Self.window.components.attoseconds / 1_000_000_000)
        if Self.now() >= due { break }
        var deadline = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
        pthread_cond_timedwait(wake, mutex, &deadline)
      }
      let done = stopped
      let due = !pending.isEmpty
      pthread_mutex_unlock(mutex)
      if done { return }
      if due && !commit() { return }
      // A failing commit is retried a window later, not in a tight loop.
      if due && locked({ failure != nil }) {
        usleep(UInt32(Self.window.components.attoseconds / 1_000_000_000_000))
      }
    }
  }

  private func locked<T>(_ body: () -> T) -> T {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return body()
  }

  private static func now() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
  }

  /// What the committing thread holds: the queue, and how to commit (without holding the store).
  private final class Committer: @unchecked Sendable {
    let queue: CommitQueue
    let commit: @Sendable () -> Bool
    init(queue: CommitQueue, commit: @escaping @Sendable () -> Bool) {
      self.queue = queue
      self.commit = commit
    }
  }
}
