import Glibc

/// Starts the disk on a working file's bytes while a stream of large writes goes on, so that
/// the disk and the writer work side by side and the `fsync` at the end has little left to do.
///
/// Linux writes dirty pages back on its own only past 10% of memory, so a file written in one
/// go reached the disk all at once in its `fsync`, after the last byte had travelled through
/// the daemon. A plain folder's writer waits for that flush as well, but its bytes take one
/// copy to the page cache where the mount's take two, and the disk stood idle meanwhile.
public enum Writeback {
  /// The span that one start covers: the first large write past its end starts it.
  public static let window: Int64 = 8 << 20
  /// Writes smaller than this start nothing: they are not a stream, and their pages may be
  /// written again in a moment (a database, a log).
  public static let minimumWrite = 256 << 10

  /// The window a stream of writes has just left behind, when a write of `count` bytes at
  /// `offset` is large enough to be part of one: the bytes to start on their way to the disk.
  /// A window counts as left behind once a large write covers bytes past its end: a stream
  /// whose writes end exactly on its end starts it with the next write, and one whose large
  /// writes alternate with small ones (a writer's buffer that does not start on a page
  /// boundary: the kernel sends 256 pages, then the rest) with the large write after it.
  public static func completedWindow(offset: Int64, count: Int) -> Range<Int64>? {
    guard count >= minimumWrite, offset >= 0 else { return nil }
    let boundary = (offset + Int64(count) - 1) / window * window
    guard boundary >= offset, boundary >= window else { return nil }
    return (boundary - window)..<boundary
  }

  /// Starts writing the dirty pages of `range` (all of the file when nil) without waiting
  /// for them; the pages stay cached.
  public static func start(_ fd: Int32, _ range: Range<Int64>? = nil) {
    guard let syncFileRange else { return }
    let start = range?.lowerBound ?? 0
    let count = range.map { $0.upperBound - $0.lowerBound } ?? 0
    _ = syncFileRange(fd, start, count, startWrite)
  }

  /// SYNC_FILE_RANGE_WRITE.
  static let startWrite: UInt32 = 2
}

/// sync_file_range(2). Glibc declares it only under _GNU_SOURCE, which Swift's Glibc module is
/// built without, so it is looked up by name; nil where the C library lacks it.
let syncFileRange: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32)? = {
  guard let symbol = dlsym(nil, "sync_file_range") else { return nil }
  return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32).self)
}()
