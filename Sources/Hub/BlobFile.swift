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
  /// ``startWriteback(_:before:count:)``).
  public static func write(_ fd: Int32, _ data: some ContiguousBytes, at offset: Int64)
    throws(HubError)
  {
    var failure: HubError?
    data.withUnsafeBytes { bytes in
      startWriteback(fd, before: offset, count: bytes.count)
      var written = 0
      while written < bytes.count {
        let put = pwrite(
          fd, bytes.baseAddress! + written, bytes.count - written,
          off_t(offset) + off_t(written))
        if put < 0 {
          if errno == EINTR { continue }
          failure = .failed("cannot write the blob's file: \(errorText())")
          return
        }
        written += put
      }
    }
    if let failure { throw failure }
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
