import DocumentModel
import Glibc
import LocalStore
import Synchronization

/// One inode of the live tree, as the file system keeps it in memory.
///
/// Regular files keep their content, size and times in their working file; everything else
/// lives here and in the store.
final class Node {
  let inode: UInt64
  var mode: UInt32 {
    didSet { Self.note(mode) }
  }
  var uid: UInt32
  var gid: UInt32
  var rdev: UInt64
  var accessTime: Int64
  var modificationTime: Int64
  var changeTime: Int64
  /// For a regular file that renames moved: its working file's ctime before the first of them
  /// and after the last. A ctime still equal to `after` means nothing but renames changed the
  /// file since `before`, so sync carries its content over rather than read it again.
  var renameChangeTimes: (before: Int64, after: Int64)?
  var target: [UInt8]?
  /// Names in this folder; raw bytes, because `String ==` would equate NFC and NFD names.
  var children: [[UInt8]: UInt64] = [:]
  /// The folder that holds this folder (folders have exactly one name).
  var parent: UInt64 = 0
  /// How many entries name this inode.
  var linkCount = 0
  var subdirectories = 0
  /// References the kernel holds (lookup counts), released by forget.
  var lookups: UInt64 = 0
  var openCount = 0
  /// Open files that may write: a version is taken only after the last of them closes.
  var writers = 0
  /// Of `writers`, those whose descriptors were all closed (FUSE's FLUSH) while the kernel's
  /// RELEASE is still on its way: close(2) has returned, so the file counts as closed.
  var closedWriters = 0
  /// The entries that name this inode, as (folder, name): one for a folder, any number for a
  /// file with hard links.
  var names: [(parent: UInt64, name: [UInt8])] = []
  var extendedAttributes: [[UInt8]: [UInt8]] = [:]

  init(record: InodeRecord) {
    inode = record.inode
    mode = record.mode
    uid = record.uid
    gid = record.gid
    rdev = record.rdev
    accessTime = record.accessTime
    modificationTime = record.modificationTime
    changeTime = record.changeTime
    target = record.target
    Self.note(mode)
  }

  /// Whether a regular file of this process has had a set-ID bit that a write would clear.
  /// Until one has, writes of callers without CAP_FSETID skip looking at their file's mode,
  /// which needs the file system's lock; once set it stays set, which is only slower.
  static let setIDSeen = Atomic<Bool>(false)

  private static func note(_ mode: UInt32) {
    if mode & UInt32(S_IFMT) == UInt32(S_IFREG), DocumentFileSystem.clearingSetID(mode) != mode {
      setIDSeen.store(true, ordering: .sequentiallyConsistent)
    }
  }

  var record: InodeRecord {
    InodeRecord(
      inode: inode, mode: mode, uid: uid, gid: gid, rdev: rdev, accessTime: accessTime,
      modificationTime: modificationTime, changeTime: changeTime, target: target)
  }

  var type: UInt32 { mode & UInt32(S_IFMT) }
  var isDirectory: Bool { type == UInt32(S_IFDIR) }
  var isRegular: Bool { type == UInt32(S_IFREG) }
  var isSymlink: Bool { type == UInt32(S_IFLNK) }
  /// No entry names it any more; it lives on while the kernel or an open file refers to it.
  var isRemoved: Bool { linkCount == 0 }

  func removeName(parent: UInt64, name: [UInt8]) {
    if let index = names.firstIndex(where: { $0.parent == parent && $0.name == name }) {
      names.remove(at: index)
    }
  }
}

/// The current time in nanoseconds since the epoch, on the clock that stamps working files.
func currentTime() -> Int64 { FileClock.now() }

/// The size, blocks and times of a virtual file (a version, a merge view) that shows `size`
/// bytes saved at `modified`.
func setVirtualFile(_ attributes: inout stat, size: UInt64, modified: HLCTimestamp) {
  attributes.st_size = Int(size)
  attributes.st_blocks = Int((size + 511) / 512)
  let time = timespecFrom(
    nanoseconds: EpochNanoseconds.from(wallMilliseconds: modified.wallMilliseconds))
  attributes.st_atim = time
  attributes.st_mtim = time
  attributes.st_ctim = time
}

func timespecFrom(nanoseconds: Int64) -> timespec {
  let (seconds, remainder) = EpochNanoseconds.split(nanoseconds)
  return timespec(tv_sec: Int(seconds), tv_nsec: Int(remainder))
}

/// A working file's time, clamped as every time docsync keeps (``EpochNanoseconds``): the disk
/// under the state folder may hold times beyond 2262 (ext4 until 2446).
func nanoseconds(_ time: timespec) -> Int64 {
  EpochNanoseconds.clamped(seconds: Int64(time.tv_sec), nanoseconds: Int64(time.tv_nsec))
}

/// A mutex for the live tree; libfuse calls in from many threads at once.
final class TreeLock: @unchecked Sendable {
  private var mutex = pthread_mutex_t()

  init() { pthread_mutex_init(&mutex, nil) }
  deinit { pthread_mutex_destroy(&mutex) }

  func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return try body()
  }
}
