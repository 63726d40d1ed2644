import ContentModel
import Crypto
import DocumentModel
import Glibc
import Hub

/// Content open for reading on this device (a blob or a working file), closed when the last
/// holder lets it go.
///
/// The bytes of a working file can change under a reader: whoever reads checks them against
/// the hash or chunk id it expects (``holds(_:)``, ``chunk(_:at:)``).
public final class ContentFile: @unchecked Sendable {
  /// The open descriptor, for a hub call that streams from it; never closed by its user.
  public let descriptor: Int32
  /// The blob file's place, for a hub that takes the file over; nil for a working file.
  public let blobPath: String?

  init(descriptor: Int32, blobPath: String?) {
    self.descriptor = descriptor
    self.blobPath = blobPath
  }

  /// A file of a state folder set aside as damaged (``SetAsideState``), open for reading; nil
  /// when it cannot be opened. Nothing it holds is trusted before it is hashed.
  public convenience init?(setAside path: String) {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    self.init(descriptor: fd, blobPath: nil)
  }

  /// Whether the descriptor is someone else's now (``detachDescriptor()``).
  private var detached = false

  deinit { if !detached { close(descriptor) } }

  /// Hands the descriptor to the caller, who closes it (a file system's open file that lives
  /// until the program closes it).
  public func detachDescriptor() -> Int32 {
    detached = true
    return descriptor
  }

  func status() -> stat? {
    var info = stat()
    return fstat(descriptor, &info) == 0 ? info : nil
  }

  /// What identifies the file as it is now: content checked in that state need not be again.
  public func identity() -> BlobIdentity? { status().map(BlobIdentity.init) }

  /// How many bytes the file holds and their SHA-256, read from the start.
  public func digest() -> (size: Int64, hash: ContentHash)? {
    guard let (size, digest) = try? BlobFile.digest(of: descriptor, .caller) else { return nil }
    return (size, ContentHash(digest.withUnsafeBytes { Digest256(bytes: $0)! }))
  }

  /// Whether the file holds exactly `hash`, reading it from the start.
  public func holds(_ hash: ContentHash) -> Bool { digest()?.hash == hash }

  /// Everything the file holds, from the start; nil when a read fails.
  public func readAll() -> [UInt8]? {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    var offset: off_t = 0
    while true {
      let n = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
      if n < 0 && errno == EINTR { continue }
      if n < 0 { return nil }
      if n == 0 { return result }
      result += buffer[0..<n]
      offset += off_t(n)
    }
  }

  /// What reading the chunk `entry` at `offset` gives: its bytes, checked against its id,
  /// other bytes (damaged, or a file changed since), or a read that fails (a failing disk:
  /// the file may read again, and is kept).
  ///
  /// `checked`: the caller knows the file, as it is now, holds the content whose chunk list
  /// named `entry` (``ContentStore/isChecked(_:_:)``: written in this run from bytes hashed as
  /// they went, and unchanged since), so the id is not hashed again; only a short read counts.
  /// `hasher` names the ids of the tree `entry` belongs to.
  public func chunk(
    _ entry: ManifestEntry, at offset: UInt64, hasher: ObjectHasher, checked: Bool = false
  ) -> ChunkRead {
    Self.chunk(of: descriptor, entry, at: offset, hasher: hasher, checked: checked)
  }

  /// ``chunk(_:at:checked:)`` of any open descriptor.
  static func chunk(
    of descriptor: Int32, _ entry: ManifestEntry, at offset: UInt64, hasher: ObjectHasher,
    checked: Bool = false
  ) -> ChunkRead {
    let count = Int(entry.size)
    var bytes = [UInt8](repeating: 0, count: count)
    var done = 0
    while done < count {
      let got = bytes.withUnsafeMutableBytes {
        pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done))
      }
      if got < 0 && errno == EINTR { continue }
      if got < 0 { return .unreadable }
      if got == 0 { return .otherBytes }
      done += got
    }
    guard checked || hasher.id(of: bytes, kind: .chunk) == entry.id else {
      return .otherBytes
    }
    return .bytes(bytes)
  }
}
