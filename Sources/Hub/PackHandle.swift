import Glibc

/// An open pack file: the descriptor closes, and any `flock` on it goes, when the last holder
/// lets go, so a reader in the middle of a `pread` never has its descriptor closed under it.
final class PackHandle: Sendable {
  /// The pack's file name in its folder.
  let name: String
  let descriptor: Int32

  init(name: String, descriptor: Int32) {
    self.name = name
    self.descriptor = descriptor
  }

  deinit {
    _ = close(descriptor)
  }

  /// The file's size, nil when it cannot be read.
  var size: Int64? {
    var info = stat()
    return fstat(descriptor, &info) == 0 ? Int64(info.st_size) : nil
  }

  /// Whether the file still has a name: a pack that a prune removed is read through a handle
  /// already open, but not kept open, which would hold its space.
  var isLinked: Bool {
    var info = stat()
    return fstat(descriptor, &info) == 0 && info.st_nlink > 0
  }

  /// Reads `length` bytes at `offset`, after `prefix`; fewer when the file ends first (a
  /// damaged pack, which the object's check then finds).
  func read(at offset: Int64, length: Int, after prefix: [UInt8] = []) throws(HubError) -> [UInt8] {
    do {
      return try BlobFile.readChunk(
        descriptor, at: offset, count: length, after: prefix, of: .hub)
    } catch {
      throw .failed("cannot read the hub's pack \(name): \(BlobFile.errorText())")
    }
  }

  /// Writes all of `bytes` at `offset`.
  func write(_ bytes: [UInt8], at offset: Int64) throws(HubError) {
    var done = 0
    while done < bytes.count {
      let count = bytes.withUnsafeBytes { buffer in
        pwrite(
          descriptor, buffer.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
      }
      if count < 0 {
        if errno == EINTR { continue }
        throw .failed("cannot write the hub's pack \(name): \(BlobFile.errorText())")
      }
      done += count
    }
  }

  /// Makes the bytes written so far durable.
  func sync() throws(HubError) {
    if fdatasync(descriptor) != 0 {
      throw .failed("cannot write the hub's pack \(name) to disk: \(BlobFile.errorText())")
    }
  }
}
