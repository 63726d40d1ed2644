import DocumentModel
import Glibc
import Synchronization

/// Announcements on their way to the process that raises them through the mount; a leaf lock,
/// so the file system posts them while holding its own.
///
/// The raising process's id is known (`begin`), and the one announcement it is raising now
/// (`current`) is what the file system answers that process's requests with: every request of
/// that process is sync's own, never a local edit.
public final class AnnouncementQueue: @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  private var condition = pthread_cond_t()
  private var pending: [Announcement] = []
  /// Documents whose conflict versions may have changed, for `.versions`.
  private var conflicts: Set<DocumentPath> = []
  /// Those of `conflicts` that a local request changed (an `rm`, `rm -r` or `mv` in
  /// `.versions`): the kernel raised the events of what that request removed, and the program
  /// that made it may still be removing the rest (`rm -r` empties a folder, then removes it),
  /// so what vanished from them is not raised again.
  private var localConflicts: Set<DocumentPath> = []
  /// The threads serving such a request now (see `resolvingLocally`).
  private var localThreads: Set<pthread_t> = []
  private var closed = false
  /// The raising process's id while it runs, 0 otherwise: read by every request, so no lock.
  private let announcer = Atomic<Int32>(0)
  private var inFlight: Announcement?
  private var posted: UInt64 = 0
  private var done: UInt64 = 0
  private var taken: UInt64 = 0
  /// Handles of the raising process's opens: far above any descriptor number, which is what
  /// the handles of other opens are.
  private var handles: Set<UInt64> = []
  private var nextHandle: UInt64 = 1 << 62
  /// Inodes the kernel knows only because the raising process made them (a new folder of an
  /// initial sync): nobody has looked at them, so nobody watches what lands in them.
  private var quiet: Set<UInt64> = []
  private let quietCount = Atomic<Int>(0)
  /// The conflict versions of each document as `.versions` showed them when last announced;
  /// only the announcing thread reads and writes it.
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

  /// Whether a process raises announcements; until one does, nothing is posted and sync's
  /// changes only invalidate the kernel's caches.
  public var isRunning: Bool { announcer.load(ordering: .relaxed) != 0 }

  /// The raising process starts: `process` is its id, as its requests carry it (it makes
  /// them from its one thread).
  public func begin(process: Int32) {
    locked {
      if !closed { announcer.store(process, ordering: .relaxed) }
    }
  }

  /// Whether a request comes from the raising process.
  public func isAnnouncer(_ pid: Int32) -> Bool {
    pid != 0 && pid == announcer.load(ordering: .relaxed)
  }

  /// Runs a local request's resolution (`rm`, `rm -r`, `mv` in `.versions`): the conflicts
  /// it changes are posted as local ones (see `localConflicts`). The engine reports them
  /// from within the call, on this thread.
  public func resolvingLocally<T>(_ body: () -> T) -> T {
    let me = pthread_self()
    locked { _ = localThreads.insert(me) }
    defer { locked { _ = localThreads.remove(me) } }
    return body()
  }

  /// The documents that local requests changed and that the announcing thread has not taken
  /// yet: what it reads of the conflicts may include those changes already.
  func pendingLocalConflicts() -> Set<DocumentPath> { locked { localConflicts } }

  /// The announcement being raised now, if any.
  public var current: Announcement? { locked { inFlight } }

  /// The announcing thread sets what it raises now (nil when done with it).
  public func setCurrent(_ announcement: Announcement?) {
    locked { inFlight = announcement }
  }

  /// A handle for an open of the raising process; it reads and writes nothing.
  func openHandle() -> UInt64 {
    locked {
      nextHandle += 1
      handles.insert(nextHandle)
      return nextHandle
    }
  }

  /// Whether `handle` is one of the raising process's opens; its flush, release and truncate
  /// change nothing, whichever thread the kernel sends them from.
  public func isOwnHandle(_ handle: UInt64) -> Bool {
    handle >= 1 << 62 && locked { handles.contains(handle) }
  }

  public func releaseHandle(_ handle: UInt64) {
    _ = locked { handles.remove(handle) }
  }

  /// The raising process's create gave the kernel `inode`: it stays quiet until someone else
  /// looks it up or lists it.
  func markQuiet(_ inode: UInt64) {
    locked {
      if quiet.insert(inode).inserted { quietCount.add(1, ordering: .relaxed) }
    }
  }

  /// Someone other than the raising process looked `inode` up, listed it, or the kernel forgot
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

  /// The conflict versions of these documents may have changed; by a local request when the
  /// calling thread serves one (`resolvingLocally`).
  func postConflicts(_ paths: Set<DocumentPath>) {
    let me = pthread_self()
    locked {
      guard isRunning, !paths.isEmpty else { return }
      if localThreads.contains(me) { localConflicts.formUnion(paths) }
      guard !paths.isSubset(of: conflicts) else { return }
      if conflicts.isEmpty { posted += 1 }
      conflicts.formUnion(paths)
      pthread_cond_broadcast(&condition)
    }
  }

  /// Waits for announcements, and for documents whose conflicts changed (`local`: those that
  /// a local request changed); nil once closed.
  public func next() -> (
    announcements: [Announcement], conflicts: Set<DocumentPath>, local: Set<DocumentPath>
  )? {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    while pending.isEmpty && conflicts.isEmpty && !closed {
      pthread_cond_wait(&condition, &mutex)
    }
    if closed { return nil }
    let batch = (pending, conflicts, localConflicts)
    taken += UInt64(pending.count) + (conflicts.isEmpty ? 0 : 1)
    pending = []
    conflicts = []
    localConflicts = []
    return batch
  }

  /// The announcing thread reports that the last batch from `next()` was raised.
  public func markDone() {
    locked {
      done = taken
      pthread_cond_broadcast(&condition)
    }
  }

  /// Waits until everything posted so far was raised, at most `milliseconds`: the raising
  /// process waits for requests of its own, so whoever waits here must not wait forever.
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
      announcer.store(0, ordering: .relaxed)
      inFlight = nil
      pthread_cond_broadcast(&condition)
    }
  }
}
