import DocumentModel
import Glibc
import Synchronization

/// Announcements on their way to the thread that raises them through the mount; a leaf lock,
/// so the file system posts them while holding its own.
///
/// The raising thread says who it is (`begin`), and the one announcement it is raising now
/// (`current`) is what the file system answers that thread's requests with: every request of
/// that thread is sync's own, never a local edit.
public final class AnnouncementQueue: @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  private var condition = pthread_cond_t()
  private var pending: [Announcement] = []
  /// Documents whose conflict versions may have changed, for `.versions`.
  private var conflicts: Set<DocumentPath> = []
  private var closed = false
  /// The raising thread's id while it runs, 0 otherwise: read by every request, so no lock.
  private let thread = Atomic<Int32>(0)
  private var inFlight: Announcement?
  private var posted: UInt64 = 0
  private var done: UInt64 = 0
  private var taken: UInt64 = 0
  /// Handles of the raising thread's opens: far above any descriptor number, which is what
  /// the handles of other opens are.
  private var handles: Set<UInt64> = []
  private var nextHandle: UInt64 = 1 << 62
  /// Inodes the kernel knows only because the raising thread made them (a new folder of an
  /// initial sync): nobody has looked at them, so nobody watches what lands in them.
  private var quiet: Set<UInt64> = []
  private let quietCount = Atomic<Int>(0)
  /// The conflict versions of each document as `.versions` showed them when last announced;
  /// only the raising thread reads and writes it.
  var shownConflicts: [DocumentPath: [VersionRecord]] = [:]

  public init() {
    pthread_mutex_init(&mutex, nil)
    pthread_cond_init(&condition, nil)
  }

  private func locked<T>(_ body: () -> T) -> T {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return body()
  }

  /// Whether a thread raises announcements; until one does, nothing is posted and sync's
  /// changes only invalidate the kernel's caches.
  public var isRunning: Bool { thread.load(ordering: .relaxed) != 0 }

  /// The raising thread starts: `thread` is its kernel thread id, as requests carry it.
  public func begin(thread: Int32) {
    locked {
      if !closed { self.thread.store(thread, ordering: .relaxed) }
    }
  }

  /// Whether a request comes from the raising thread.
  public func isAnnouncer(_ pid: Int32) -> Bool {
    pid != 0 && pid == thread.load(ordering: .relaxed)
  }

  /// The announcement being raised now, if any.
  public var current: Announcement? { locked { inFlight } }

  /// The raising thread sets what it raises now (nil when done with it).
  public func setCurrent(_ announcement: Announcement?) {
    locked { inFlight = announcement }
  }

  /// A handle for an open of the raising thread; it reads and writes nothing.
  func openHandle() -> UInt64 {
    locked {
      nextHandle += 1
      handles.insert(nextHandle)
      return nextHandle
    }
  }

  /// Whether `handle` is one of the raising thread's opens; its flush, release and truncate
  /// change nothing, whichever thread the kernel sends them from.
  public func isOwnHandle(_ handle: UInt64) -> Bool {
    handle >= 1 << 62 && locked { handles.contains(handle) }
  }

  public func releaseHandle(_ handle: UInt64) {
    _ = locked { handles.remove(handle) }
  }

  /// The raising thread's create gave the kernel `inode`: it stays quiet until someone else
  /// looks it up or lists it.
  func markQuiet(_ inode: UInt64) {
    locked {
      if quiet.insert(inode).inserted { quietCount.add(1, ordering: .relaxed) }
    }
  }

  /// Someone other than the raising thread looked `inode` up, listed it, or the kernel forgot
  /// it. A lookup of a tree with no quiet inode (most of the time) takes no lock here.
  public func noteSeen(_ inode: UInt64, by pid: Int32 = 0) {
    guard quietCount.load(ordering: .relaxed) > 0, !isAnnouncer(pid) else { return }
    locked {
      if quiet.remove(inode) != nil { quietCount.subtract(1, ordering: .relaxed) }
    }
  }

  func isQuiet(_ inode: UInt64) -> Bool {
    quietCount.load(ordering: .relaxed) > 0 && locked { quiet.contains(inode) }
  }

  func post(_ announcement: Announcement) {
    locked {
      guard isRunning else { return }
      pending.append(announcement)
      posted += 1
      pthread_cond_broadcast(&condition)
    }
  }

  /// The conflict versions of these documents may have changed.
  func postConflicts(_ paths: Set<DocumentPath>) {
    locked {
      guard isRunning, !paths.isSubset(of: conflicts) else { return }
      if conflicts.isEmpty { posted += 1 }
      conflicts.formUnion(paths)
      pthread_cond_broadcast(&condition)
    }
  }

  /// Waits for announcements, and for documents whose conflicts changed; nil once closed.
  public func next() -> (announcements: [Announcement], conflicts: Set<DocumentPath>)? {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    while pending.isEmpty && conflicts.isEmpty && !closed {
      pthread_cond_wait(&condition, &mutex)
    }
    if closed { return nil }
    let batch = (pending, conflicts)
    taken += UInt64(pending.count) + (conflicts.isEmpty ? 0 : 1)
    pending = []
    conflicts = []
    return batch
  }

  /// The raising thread reports that the last batch from `next()` was raised.
  public func markDone() {
    locked {
      done = taken
      pthread_cond_broadcast(&condition)
    }
  }

  /// Waits until everything posted so far was raised, at most `milliseconds`: the raising
  /// thread waits for requests of its own, so whoever waits here must not wait forever.
  public func waitUntilRaised(milliseconds: Int) {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    let target = posted
    var deadline = timespec()
    clock_gettime(CLOCK_REALTIME, &deadline)
    let total = Int(deadline.tv_nsec) + milliseconds * 1_000_000
    deadline.tv_sec += total / 1_000_000_000
    deadline.tv_nsec = total % 1_000_000_000
    while done < target && !closed {
      if pthread_cond_timedwait(&condition, &mutex, &deadline) == ETIMEDOUT { return }
    }
  }

  public func close() {
    locked {
      closed = true
      thread.store(0, ordering: .relaxed)
      inFlight = nil
      pthread_cond_broadcast(&condition)
    }
  }
}
