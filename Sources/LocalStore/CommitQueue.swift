import Glibc

/// Tree changes accepted but not yet committed, grouped so that many of them share one commit.
///
/// A create, `setattr` or rename used to commit its own transaction while the tree's lock was
/// held, so every metadata request waited for SQLite. Now the request only queues its changes;
/// they are committed, in the order they were queued, by whichever comes first: the next write
/// of anything else to the state database (so the database never sees a later change before an
/// earlier one), a flush (`fsync`, `fsyncdir`, unmount, the engine's durability points), or a
/// thread of the queue's own once the oldest change has waited ``window`` (at once, for a while
/// after an `fsync`: ``expectFlushes()``). A crash loses at most that window of changes nobody
/// asked to be durable, as a crash of a local disk's cache does; each operation's changes still
/// commit all together or not at all.
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
  let window: Duration
  /// How long after an `fsync` changes commit as they come.
  let eagerSpan: Duration

  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  private var pending = Batch()
  /// CLOCK_MONOTONIC nanoseconds at which the oldest pending change was queued.
  private var oldest: Int64 = 0
  private var stopped = false
  /// CLOCK_MONOTONIC nanoseconds until which changes commit as they come (``expectFlushes()``).
  private var eagerUntil: Int64 = 0
  /// The last commit's failure and when it came (CLOCK_MONOTONIC nanoseconds), until a commit
  /// succeeds again.
  private var lastFailure: (reason: String, at: Int64)?

  init(window: Duration = .milliseconds(5), eagerSpan: Duration = .seconds(1)) {
    self.window = window
    self.eagerSpan = eagerSpan
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
  /// the pending batch itself, and is told whether an `fsync` is expected soon); it ends when
  /// `commit` returns false (the store is gone) or at ``stop()``.
  func startCommitting(_ commit: @escaping @Sendable (_ eager: Bool) -> Bool) {
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

  /// An `fsync` came: for a while, changes commit as soon as they are queued, on the queue's
  /// thread, so that the next `fsync` (an editor's next save: a temporary file created,
  /// written, fsynced and renamed over) finds its names committed and has only the disk to
  /// wait for. A program that makes many changes and no `fsync` (`tar`, `cp -r`,
  /// `git checkout`) keeps sharing one commit among a window's changes: committing each at
  /// once cost `tar` half again its time. (Committing only new files' names at once, so that a
  /// save's rename joined the next save's create in one commit, left that bigger commit
  /// running when the `fsync` came: saves took longer, not shorter.)
  func expectFlushes() {
    locked {
      eagerUntil = Self.now() + Self.nanoseconds(eagerSpan)
      if !pending.isEmpty { pthread_cond_signal(wake) }
    }
  }

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
      lastFailure = (failure, Self.now())
    }
  }

  /// Notes that a transaction committed (the failure, if any, is over).
  func committed() {
    locked { lastFailure = nil }
  }

  /// The last commit's failure and when it came (CLOCK_MONOTONIC nanoseconds), until a commit
  /// succeeds again.
  var failure: (reason: String, at: Int64)? { locked { lastFailure } }

  /// Ends the committing thread.
  func stop() {
    locked {
      stopped = true
      pthread_cond_signal(wake)
    }
  }

  /// The longest a failing commit waits before it is tried again.
  static let longestRetry = Duration.seconds(1)

  private func serve(_ commit: (_ eager: Bool) -> Bool) {
    var retry = window
    while true {
      pthread_mutex_lock(mutex)
      while pending.isEmpty && !stopped { pthread_cond_wait(wake, mutex) }
      // Wait out the rest of the oldest change's window, unless a flush takes it sooner or an
      // `fsync` is expected.
      var eager = false
      while !pending.isEmpty && !stopped {
        let now = Self.now()
        eager = now < eagerUntil
        let due = oldest + Self.nanoseconds(window)
        if eager || now >= due { break }
        var deadline = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
        pthread_cond_timedwait(wake, mutex, &deadline)
      }
      let done = stopped
      let due = !pending.isEmpty
      pthread_mutex_unlock(mutex)
      if done { return }
      if due && !commit(eager) { return }
      // A failing commit (a full disk) is retried a window later, then twice as long each
      // time up to a second: every 5 ms, it cost 3% of a processor until the disk had room.
      if due && locked({ lastFailure != nil }) {
        usleep(UInt32(Self.nanoseconds(retry) / 1000))
        retry = min(retry * 2, Self.longestRetry)
      } else {
        retry = window
      }
    }
  }

  private func locked<T>(_ body: () -> T) -> T {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return body()
  }

  private static func nanoseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1_000_000_000
      + duration.components.attoseconds / 1_000_000_000
  }

  private static func now() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
  }

  /// What the committing thread holds: the queue, and how to commit (without holding the store).
  private final class Committer: @unchecked Sendable {
    let queue: CommitQueue
    let commit: @Sendable (_ eager: Bool) -> Bool
    init(queue: CommitQueue, commit: @escaping @Sendable (_ eager: Bool) -> Bool) {
      self.queue = queue
      self.commit = commit
    }
  }
}
