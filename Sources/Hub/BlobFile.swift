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

  /// Writes all of `data` at `offset`.
  public static func write(_ fd: Int32, _ data: some ContiguousBytes, at offset: Int64)
    throws(HubError)
  {
    var failure: HubError?
    data.withUnsafeBytes { bytes in
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

  /// The text of the current `errno`.
  public static func errorText() -> String {
    String(cString: strerror(errno))
  }
}
