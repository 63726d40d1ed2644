import Foundation
import Glibc

/// The local file side of a blob transfer, shared by every hub: chunks read from and written
/// to a descriptor at explicit offsets, whatever the descriptor's own position.
public enum BlobFile {
  /// Reads up to `count` bytes at `offset`, fewer only at the end of the file.
  public static func readChunk(_ fd: Int32, at offset: Int64, count: Int) throws(HubError)
    -> [UInt8]
  {
    var buffer = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
      let got = buffer.withUnsafeMutableBytes { bytes in
        pread(fd, bytes.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
      }
      if got < 0 {
        if errno == EINTR { continue }
        throw .failed("cannot read the blob's file: \(errorText())")
      }
      if got == 0 { break }
      filled += got
    }
    buffer.removeLast(count - filled)
    return buffer
  }

  /// Writes all of `data` at `offset`, and starts the disk on as many bytes before it (see
  /// ``startWriteback(_:before:count:)``). On a descriptor that ``writeAround(_:size:)`` set
  /// up, aligned chunks go straight to the disk; the first one that is not aligned (the
  /// file's tail), or that the file system refuses, turns that off and goes through the cache.
  public static func write(_ fd: Int32, _ data: some ContiguousBytes, at offset: Int64)
    throws(HubError)
  {
    var failure: HubError?
    data.withUnsafeBytes { bytes in
      var direct = writesAround(fd)
      if direct && !isAligned(bytes, at: offset) { direct = !stopWritingAround(fd) }
      if !direct { startWriteback(fd, before: offset, count: bytes.count) }
      var written = 0
      while written < bytes.count {
        let put = pwrite(
          fd, bytes.baseAddress! + written, bytes.count - written,
          off_t(offset) + off_t(written))
        if put < 0 {
          if errno == EINTR { continue }
          // A file system may want a larger alignment than a page, or none of it at all.
          if errno == EINVAL && direct {
            direct = !stopWritingAround(fd)
            if !direct { continue }
          }
          failure = .failed("cannot write the blob's file: \(errorText())")
          return
        }
        written += put
      }
    }
    if let failure { throw failure }
  }

  /// Blobs at least this large are written around the page cache. A page-cache write of 1 GiB
  /// takes a GiB of memory that nobody reads soon, and dirties as much, which the kernel then
  /// throttles every writer of the disk on; on this virtual machine each of those new pages also
  /// cost the host a fault when its memory had been reported free (a 1 GiB pull spent 72% of
  /// its CPU in the copy into new pages, 2.5 s). Below it, a file is written in one or a few
  /// chunks and is likely to be read soon: the cache is the better place.
  public static let writeAroundThreshold: Int64 = 8 << 20

  /// Bytes written per step around the cache: each write waits for the disk, so fewer, larger
  /// ones keep it busy (dd of 1 GiB with O_DIRECT here: 0.86–0.91 s in 1 MiB writes, 0.65–0.97 s
  /// in 4 MiB ones).
  public static let writeAroundStep = 4 << 20

  /// Asks that the writes of `size` bytes into `fd` go straight to the disk (O_DIRECT), when
  /// `size` reaches ``writeAroundThreshold``; returns whether they will. A file system without
  /// direct I/O refuses, and the writes stay cached. The caller still fsyncs the file: that
  /// writes the tail and the file's metadata, and flushes the disk's cache.
  @discardableResult
  public static func writeAround(_ fd: Int32, size: Int64) -> Bool {
    guard size >= writeAroundThreshold, directFlag != 0 else { return false }
    let flags = fcntl(fd, F_GETFL)
    guard flags >= 0 else { return false }
    return fcntl(fd, F_SETFL, flags | directFlag) == 0
  }

  /// O_DIRECT, which Swift's Glibc module does not import; its value differs between
  /// architectures (asm-generic/fcntl.h and the architectures' own), 0 where unknown here.
  #if arch(x86_64) || arch(i386)
    static let directFlag: Int32 = 0o40000
  #elseif arch(arm64) || arch(arm)
    static let directFlag: Int32 = 0o200000
  #else
    static let directFlag: Int32 = 0
  #endif

  static func writesAround(_ fd: Int32) -> Bool {
    guard directFlag != 0 else { return false }
    let flags = fcntl(fd, F_GETFL)
    return flags >= 0 && flags & directFlag != 0
  }

  /// Turns direct writes off for `fd`; returns whether they are off.
  @discardableResult
  public static func stopWritingAround(_ fd: Int32) -> Bool {
    let flags = fcntl(fd, F_GETFL)
    return flags >= 0 && fcntl(fd, F_SETFL, flags & ~directFlag) == 0
  }

  /// Whether a direct write of `bytes` at `offset` meets the alignment every Linux file system
  /// with direct I/O accepts: memory, offset and length on 4 KiB.
  static func isAligned(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
    let page = 4096
    guard let base = bytes.baseAddress else { return false }
    return Int(bitPattern: base) % page == 0 && offset % Int64(page) == 0
      && bytes.count % page == 0
  }

  /// Starts writing to disk the `count` bytes before `offset`, which the caller wrote a moment
  /// ago and will fsync at the end, so that the disk works while the next chunks are copied and
  /// the final fsync has little left to do.
  ///
  /// Linux writes dirty pages back on its own only past 10% of memory: a 1 GiB file went to
  /// disk all at once in the fsync, after its last byte was copied. sync_file_range is not
  /// imported into Swift; POSIX_FADV_DONTNEED starts the same writeback (PostgreSQL's
  /// pg_flush_data falls back to it), and drops only pages already clean, which bytes written
  /// one chunk ago are not yet.
  public static func startWriteback(_ fd: Int32, before offset: Int64, count: Int) {
    let start = max(0, offset - Int64(count))
    guard offset > start else { return }
    _ = posix_fadvise(fd, off_t(start), off_t(offset - start), POSIX_FADV_DONTNEED)
  }

  /// The text of the current `errno`.
  public static func errorText() -> String {
    String(cString: strerror(errno))
  }
}
