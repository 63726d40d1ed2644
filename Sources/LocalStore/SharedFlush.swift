import Glibc

/// Lets an `fsync` of a working file carry the state database's journal to the disk in the
/// same flush of the disk's cache, where that is safe: one flush per `fsync`, not two.
///
/// An `fsync` on the mount needs the working file's content and the journal's last commit
/// (the names made before it) on the disk. Flushed side by side (``JournalSync``), the two
/// flushes still went one after the other in the disk's queue: `perf trace` of atomic saves as
/// an ordinary user showed each at 0.35 ms where a plain folder's one `fsync` took 0.2 ms.
///
/// When the journal's new pages overwrite blocks it already has (SQLite starts its WAL over
/// after each checkpoint, without shrinking the file), writing them needs no change of the
/// file's size or block map: it is enough that the pages reach the disk before the disk's
/// cache is flushed. So they are written and waited for (`sync_file_range`), and the working
/// file's `fsync` that follows flushes the cache, with the journal's pages in it: ext4's
/// `fsync` and `fdatasync` always end in a flush of the whole device (without a journal, or
/// through its journal's commit) when they return, on Linux 6.6 and later. So this is used only
/// there, with the journal and the working files on one device; elsewhere, and while the
/// journal grows, its own `fdatasync` runs as before.
final class SharedFlush: @unchecked Sendable {
  private let journal: Int32
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  /// How far the journal's blocks and size are on the disk (a completed `fdatasync` of it).
  private var durableSize: Int64 = 0
  /// Counts the truncations of the journal: a size measured before one says nothing after.
  private var generation: UInt64 = 0

  /// A shared flush for `journal` beside the working files, or nil where it is not safe.
  static func make(journal: Int32, workingFiles: Int32) -> SharedFlush? {
    guard journal >= 0, syncFileRange != nil, kernelFlushesOnEveryFsync() else { return nil }
    guard fileSystemType(workingFiles) == ext4Magic else { return nil }
    var journalInfo = stat()
    var folderInfo = stat()
    guard fstat(journal, &journalInfo) == 0, fstat(workingFiles, &folderInfo) == 0,
      journalInfo.st_dev == folderInfo.st_dev
    else { return nil }
    return SharedFlush(journal: journal)
  }

  /// Linux 6.6 and later: before it, ext4 without a journal returned from the `fsync` of a file
  /// with nothing to write without flushing the disk's cache (ext4_fsync_nojournal).
  private static func kernelFlushesOnEveryFsync() -> Bool {
    var names = utsname()
    guard uname(&names) == 0 else { return false }
    let release = withUnsafeBytes(of: names.release) { raw in
      String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
    let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
    guard numbers.count == 2 else { return false }
    return (numbers[0], numbers[1]) >= (6, 6)
  }

  private init(journal: Int32) {
    self.journal = journal
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// The journal's size now, and the truncation count it belongs to, for ``noteSynced(_:)``
  /// after an `fdatasync` of the journal that starts after this call.
  func measure() -> (size: Int64, generation: UInt64) {
    var info = stat()
    let size = fstat(journal, &info) == 0 ? Int64(info.st_size) : 0
    return (size, locked { generation })
  }

  /// Notes that an `fdatasync` of the journal, started after `measured`, has completed.
  func noteSynced(_ measured: (size: Int64, generation: UInt64)) {
    locked {
      if measured.generation == generation { durableSize = max(durableSize, measured.size) }
    }
  }

  /// Before the journal is truncated: its blocks must be flushed by its own `fdatasync` again.
  func journalWillShrink() {
    locked {
      generation += 1
      durableSize = 0
    }
  }

  /// After the truncation: a size measured while it ran may be of the old file.
  func journalShrank() {
    locked { generation += 1 }
  }

  /// Writes the journal's pages to the disk and waits for them, when they lie within blocks
  /// whose place is durable already; then the caller's `fsync` of a working file makes them
  /// durable with its own. False when the journal needs its own `fdatasync`.
  func writeJournalForNextFlush() -> Bool {
    guard let syncFileRange else { return false }
    var info = stat()
    guard fstat(journal, &info) == 0, info.st_size > 0,
      Int64(info.st_size) <= locked({ durableSize })
    else { return false }
    return syncFileRange(journal, 0, 0, waitBefore | write | waitAfter) == 0
  }

  private func locked<T>(_ body: () -> T) -> T {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return body()
  }

  private static let ext4Magic = 0xEF53
  private let waitBefore: UInt32 = 1
  private let write = Writeback.startWrite
  private let waitAfter: UInt32 = 4
}

/// The `f_type` of fstatfs(2) (the first field of `struct statfs`, a C long on Linux), or nil.
/// Swift's Glibc module does not import <sys/vfs.h>, so it is looked up by name.
private func fileSystemType(_ fd: Int32) -> Int? {
  guard let symbol = dlsym(nil, "fstatfs") else { return nil }
  let fstatfs = unsafeBitCast(
    symbol, to: (@convention(c) (Int32, UnsafeMutableRawPointer) -> Int32).self)
  // Larger than `struct statfs` (120 bytes on 64-bit Linux).
  let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 8)
  defer { buffer.deallocate() }
  guard fstatfs(fd, buffer) == 0 else { return nil }
  return buffer.load(as: Int.self)
}
