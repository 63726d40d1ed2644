import ContentModel
import DocumentModel
import Glibc
import Hub

/// A blob on its way into the content store: written (by a fetch, or chunk by chunk), then
/// installed under its hash (``ContentStore/install(_:as:durable:)``), or else removed when
/// its last holder lets it go.
public final class IncomingBlob {
  let path: String
  /// The open descriptor, for a hub call that fills it; never closed by its user.
  public let descriptor: Int32
  private var isInstalled = false

  init(path: String, descriptor: Int32) {
    self.path = path
    self.descriptor = descriptor
  }

  deinit {
    close(descriptor)
    if !isInstalled { unlink(path) }
  }

  func installed() { isInstalled = true }

  /// How many bytes it holds so far.
  public var size: Int64 {
    var info = stat()
    return fstat(descriptor, &info) == 0 ? Int64(info.st_size) : 0
  }

  /// What reading back the chunk `entry` written at `offset` gives, checked against its id.
  public func chunk(_ entry: ManifestEntry, at offset: UInt64, hasher: ObjectHasher) -> ChunkRead {
    ContentFile.chunk(of: descriptor, entry, at: offset, hasher: hasher)
  }

  /// Writes all of `bytes` at `offset`.
  public func write(_ bytes: [UInt8], at offset: UInt64) throws(ContentError) {
    let done = bytes.withUnsafeBytes {
      ContentStore.writeAll($0, to: descriptor, at: Int64(offset))
    }
    guard done == bytes.count else {
      throw ContentError("cannot write a blob: \(BlobFile.errorText())")
    }
  }
}
