import DocumentModel
import Glibc
import Hub

/// What the local tree holds at a path, as far as syncing cares.
public enum LocalEntry: Sendable, Equatable {
  /// A regular file, with the working file's size and times to notice changes cheaply.
  case file(
    inode: UInt64, size: Int64, modificationTime: Int64, changeTime: Int64, executable: Bool)
  case directory
  case symlink(target: [UInt8], modificationTime: Int64)
  /// FIFOs, sockets and device nodes: they stay local and never sync.
  case special
}

/// A remote version to write into the local tree.
public enum RemoteChange: Sendable {
  /// Replace or create the file at `path` with the working file `incoming` (a name relative
  /// to the working files, from ``ContentStore/createIncomingFile()``), whose content, times
  /// and durability the engine has seen to; the file system only gives it the path's name.
  case file(path: DocumentPath, incoming: String, executable: Bool)
  case directory(path: DocumentPath)
  case symlink(path: DocumentPath, target: [UInt8], modificationTime: Int64)
  case remove(path: DocumentPath)

  public var path: DocumentPath {
    switch self {
    case .file(let path, _, _), .directory(let path), .symlink(let path, _, _),
      .remove(let path):
      path
    }
  }
}

/// The outcome of applying a remote change.
public enum ApplyOutcome: Sendable, Equatable {
  /// Done; the path now holds this (nil: nothing).
  case applied(LocalEntry?)
  /// The path changed locally since the engine looked, or is open for writing: not applied.
  case skipped
}

/// The local tree as the sync engine sees it: implemented by the document file system, so the
/// engine knows nothing of inodes, handles or FUSE.
///
/// The engine calls these while holding its own lock; an implementation must never call back
/// into the engine while holding a lock of its own that these methods take.
public protocol LocalTree: AnyObject, Sendable {
  /// What `path` holds now, or nil.
  func entry(at path: DocumentPath) -> LocalEntry?
  /// Hands over every path at or below `path` and what it holds, one at a time, holding the
  /// tree's lock throughout: `body` must not call the tree.
  func forEachEntry(under path: DocumentPath, _ body: (DocumentPath, LocalEntry) -> Void)
  /// The ctime the file at `path` had before renames moved it, if its ctime is still
  /// `changeTime`, the one the last rename gave it (nothing else changed it since); else nil.
  func changeTimeBeforeRenames(at path: DocumentPath, changeTime: Int64) -> Int64?
  /// Whether a file at `path` is open for writing.
  func hasOpenWriter(at path: DocumentPath) -> Bool
  /// Writes a remote version, unless the path no longer holds `expected`. For a file, only
  /// renames the engine's new working file into place; the engine fsyncs the folders after.
  func apply(_ change: RemoteChange, expected: LocalEntry?) -> ApplyOutcome
  /// The conflict versions changed: views of `.versions` must be refreshed.
  func conflictsChanged(at paths: Set<DocumentPath>)
  /// Returns once the kernel has been told of every change made so far, so that a reader
  /// that starts after `docsync sync` returns sees the new content. Called without the lock.
  func flushKernelCaches()
}

/// Local operations as the file system reports them, for the engine to fold into versions
/// once the paths have been quiet for a moment.
///
/// A leaf lock: the file system calls `note` while holding its own lock.
public final class ChangeLog: @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  private var operations: [LocalOperation] = []
  /// How many pending operations touch each path: ``isPending(_:)`` asks per path, as sync
  /// brings each one up to date.
  private var pending: [DocumentPath: Int] = [:]
  private var lastActivity: UInt64 = 0
  private var wakeOnNote = false

  /// Wakes the engine: at the next operation once it asked (``sleepBeforeWindowEnds(_:)``), and
  /// for whatever else it waits on (a requested sync, pause, resume, stop).
  let wake = ChangeSignal()

  public init() { pthread_mutex_init(&mutex, nil) }

  public func note(_ operation: LocalOperation) {
    pthread_mutex_lock(&mutex)
    operations.append(operation)
    count(operation, by: 1)
    lastActivity = monotonicMilliseconds()
    let wakeNow = wakeOnNote
    wakeOnNote = false
    pthread_mutex_unlock(&mutex)
    if wakeNow { wake.signal() }
  }

  /// Puts operations that were taken back in front of those noted since, in their order: a
  /// window that could not be recorded. Its quiet moment has passed already.
  func restore(_ taken: [LocalOperation]) {
    pthread_mutex_lock(&mutex)
    operations = taken + operations
    for operation in taken { count(operation, by: 1) }
    pthread_mutex_unlock(&mutex)
  }

  private func count(_ operation: LocalOperation, by delta: Int) {
    func add(_ path: DocumentPath) {
      let count = pending[path, default: 0] + delta
      pending[path] = count > 0 ? count : nil
    }
    switch operation {
    case .create(let path), .write(let path), .remove(let path): add(path)
    case .rename(let from, let to):
      add(from)
      add(to)
    }
  }

  /// Whether an operation on `path` or a folder above it (a rename moves what is below) is
  /// pending. The file system notes an operation under its own lock, with the change itself:
  /// a path read from the tree before this is asked shows nothing that this does not know of.
  func isPending(_ path: DocumentPath) -> Bool {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    guard !pending.isEmpty else { return false }
    var ancestor = path
    while !ancestor.isRoot {
      if pending[ancestor] != nil { return true }
      ancestor = ancestor.parent
    }
    return false
  }

  /// How long the engine may sleep before the pending operations have been quiet for `window`
  /// milliseconds, or nil when no window is open (nothing pending, or all of it already quiet
  /// and held back by open files): then the next operation sends one ``wake`` signal.
  ///
  /// One decision under the lock, so an operation cannot slip in between the look and the
  /// request to be woken. While a window is open nothing is asked: a burst of writes must not
  /// wake the engine once per write; the window's end will.
  func sleepBeforeWindowEnds(_ window: UInt64) -> UInt64? {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    let quiet = monotonicMilliseconds() - lastActivity
    let windowOpen = !operations.isEmpty && quiet < window
    wakeOnNote = !windowOpen
    return windowOpen ? window - quiet : nil
  }

  /// Keeps the window open without an operation (a write in progress).
  public func touch() {
    pthread_mutex_lock(&mutex)
    lastActivity = monotonicMilliseconds()
    pthread_mutex_unlock(&mutex)
  }

  /// Milliseconds since the last activity, and whether anything is pending.
  func quietFor() -> (milliseconds: UInt64, pending: Bool) {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return (monotonicMilliseconds() - lastActivity, !operations.isEmpty)
  }

  func peekPaths() -> Set<DocumentPath> {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return Set(pending.keys)
  }

  /// Takes the pending operations but those that touch a path of `held`, or a path that a
  /// pending rename ties to one of them: one save's steps are recorded together.
  func drain(holdingBack held: Set<DocumentPath>) -> [LocalOperation] {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    guard !held.isEmpty else {
      let drained = operations
      operations = []
      pending = [:]
      return drained
    }
    var tied = held
    var grew = true
    while grew {
      grew = false
      for case .rename(let from, let to) in operations
      where tied.contains(from) != tied.contains(to) {
        tied.insert(from)
        tied.insert(to)
        grew = true
      }
    }
    func isTied(_ operation: LocalOperation) -> Bool {
      switch operation {
      case .create(let path), .write(let path), .remove(let path): tied.contains(path)
      case .rename(let from, let to): tied.contains(from) || tied.contains(to)
      }
    }
    let drained = operations.filter { !isTied($0) }
    operations.removeAll { !isTied($0) }
    for operation in drained { count(operation, by: -1) }
    return drained
  }
}

func monotonicMilliseconds() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return UInt64(clamping: now.tv_sec) &* 1000 &+ UInt64(clamping: now.tv_nsec) / 1_000_000
}

func wallMilliseconds() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_REALTIME, &now)
  // A clock set before 1970 (a dead battery) reads as the epoch rather than trapping.
  return EpochNanoseconds.wallMilliseconds(
    EpochNanoseconds.clamped(seconds: Int64(now.tv_sec), nanoseconds: Int64(now.tv_nsec)))
}

extension LocalTree {
  /// Every path at or below `path` and what it holds.
  public func entries(under path: DocumentPath) -> [DocumentPath: LocalEntry] {
    var result: [DocumentPath: LocalEntry] = [:]
    forEachEntry(under: path) { result[$0] = $1 }
    return result
  }
}
