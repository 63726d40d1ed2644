import Glibc

/// Empty working files made ahead of the inodes that will need them, by a thread of their own,
/// so that a create takes one that exists already instead of waiting, under the tree's lock,
/// for the disk's file system to find a free inode; the same thread removes the working files
/// whose inodes a commit of the commit queue's thread let go (``remove(_:)``).
///
/// During atomic saves as an ordinary user, `perf trace` of the daemon showed each new working
/// file's `openat(O_CREAT)` at 0.15–0.4 ms (ext4 without a journal skips the inodes freed in the
/// last minutes, and every save frees one), where the whole `open(2)` of a new file on the
/// plain folder took 17 µs. A file made here is kept open until it is taken: its inode stays in
/// memory, and with it ext4's note that its name is new, which the first `fsync` of the file
/// makes durable along with its content.
///
/// Files that are never taken (the number went to a folder, or sync renamed its own file over
/// the name) are closed, never unlinked here: the name may be a real working file by then.
/// Those left empty are removed as strays at the next start, as after a crash.
final class WorkingFilePool: @unchecked Sendable {
  /// How many inode numbers ahead of the next one the files are made.
  static let depth: UInt64 = 32

  private let folder: Int32
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  /// Open files made for these inode numbers, waiting to be taken.
  private var ready: [UInt64: Int32] = [:]
  /// The lowest inode number that may still be taken.
  private var next: UInt64 = 0
  /// Numbers below this one have been made (or tried).
  private var made: UInt64 = 0
  /// Working files to unlink, whose inodes' removal is committed.
  private var doomed: [UInt64] = []
  private var running = false
  private var stopped = false

  /// `workingFiles` is the folder's descriptor, which the pool duplicates for its own thread.
  init(workingFiles: Int32) {
    folder = fcntl(workingFiles, F_DUPFD_CLOEXEC, 0)
    pthread_mutex_init(mutex, nil)
    pthread_cond_init(condition, nil)
  }

  deinit {
    for fd in ready.values { close(fd) }
    if folder >= 0 { close(folder) }
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  /// Starts making files for the inode numbers from `inode` on (the tree's next number).
  func start(from inode: UInt64) {
    let startThread = locked { () -> Bool in
      next = max(next, inode)
      made = max(made, next)
      pthread_cond_broadcast(condition)
      guard !running, !stopped, folder >= 0 else { return false }
      running = true
      return true
    }
    guard startThread else { return }
    let context = Unmanaged.passRetained(self)
    var thread = pthread_t()
    pthread_create(
      &thread, nil,
      { argument in
        let pool = Unmanaged<WorkingFilePool>.fromOpaque(argument!).takeRetainedValue()
        pool.serve()
        return nil
      }, context.toOpaque())
    pthread_detach(thread)
  }

  /// The open, empty working file made for `inode`, if it is ready; numbers below it will
  /// not be asked for again, and their files are let go.
  func take(_ inode: UInt64) -> Int32? {
    var stale: [Int32] = []
    let fd = locked { () -> Int32? in
      if inode + 1 > next { next = inode + 1 }
      let fd = ready.removeValue(forKey: inode)
      for (number, file) in ready where number < inode {
        ready[number] = nil
        stale.append(file)
      }
      pthread_cond_signal(condition)
      return fd
    }
    for file in stale { close(file) }
    return fd
  }

  /// Queues the working files of `inodes`, whose removal is committed, for the pool's thread
  /// to unlink: nothing waits for them, and the commit queue's thread, which an `fsync` may be
  /// waiting for, should not either. False when the thread does not run: the caller unlinks.
  func remove(_ inodes: [UInt64]) -> Bool {
    if inodes.isEmpty { return true }
    return locked { () -> Bool in
      guard running, !stopped else { return false }
      doomed += inodes
      pthread_cond_signal(condition)
      return true
    }
  }

  /// Ends the thread, closes the files nobody took, and removes those still to be removed.
  func stop() {
    let (files, left) = locked { () -> ([Int32], [UInt64]) in
      stopped = true
      pthread_cond_broadcast(condition)
      defer {
        ready = [:]
        doomed = []
      }
      return (Array(ready.values), doomed)
    }
    for fd in files { close(fd) }
    unlink(left)
  }

  private func unlink(_ inodes: [UInt64]) {
    for inode in inodes { _ = unlinkat(folder, LocalStore.workingFileName(inode), 0) }
  }

  private func serve() {
    // Below the threads that serve requests: interleaved atomic saves showed the WRITE after
    // each create slower by the CPU this thread took to make the next file at the same moment.
    if let threadID = currentThreadID {
      _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(threadID()), 10)
    }
    pthread_mutex_lock(mutex)
    while true {
      while !stopped && doomed.isEmpty && made >= next + Self.depth {
        pthread_cond_wait(condition, mutex)
      }
      if stopped { break }
      if !doomed.isEmpty {
        let inodes = doomed
        doomed = []
        pthread_mutex_unlock(mutex)
        unlink(inodes)
        pthread_mutex_lock(mutex)
        continue
      }
      if made < next { made = next }
      let inode = made
      made += 1
      pthread_mutex_unlock(mutex)
      // O_EXCL: a file of that name is someone else's (a create that did not wait for this
      // one), never to be opened here.
      let fd = openat(
        folder, LocalStore.workingFileName(inode), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
      pthread_mutex_lock(mutex)
      guard fd >= 0 else { continue }
      if inode >= next && !stopped {
        ready[inode] = fd
      } else {
        // Taken meanwhile by a create that made its own (or opened this one): not ours to keep.
        close(fd)
      }
    }
    running = false
    pthread_mutex_unlock(mutex)
  }

  private func locked<T>(_ body: () -> T) -> T {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return body()
  }
}

/// gettid(2), for the nice value of one thread (setpriority with PRIO_PROCESS takes a thread
/// id on Linux). Glibc declares it only under _GNU_SOURCE, so it is looked up by name.
private let currentThreadID: (@convention(c) () -> Int32)? = {
  guard let symbol = dlsym(nil, "gettid") else { return nil }
  return unsafeBitCast(symbol, to: (@convention(c) () -> Int32).self)
}()
