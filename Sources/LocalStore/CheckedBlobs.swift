import DocumentModel
import Glibc
import Synchronization

/// The blobs this run wrote from bytes it hashed as it wrote them, as their files were then: a
/// blob still in that state holds what its name says, so its upload need not hash it again.
final class CheckedBlobs: Sendable {
  private let identities = Mutex<[ContentHash: BlobIdentity]>([:])

  /// Notes the blob file at `path`, just written from bytes that hash to `hash`.
  func note(_ hash: ContentHash, path: String) {
    var info = stat()
    guard stat(path, &info) == 0 else { return }
    identities.withLock { $0[hash] = BlobIdentity(info) }
  }

  /// Whether the open file `fd` is the blob `hash` as it was written (any change to the file,
  /// even a byte written in place with its times put back, changes its change time).
  func holds(_ fd: Int32, _ hash: ContentHash) -> Bool {
    var info = stat()
    guard fstat(fd, &info) == 0 else { return false }
    return identities.withLock { $0[hash] == BlobIdentity(info) }
  }

  func forget(_ hash: ContentHash) {
    _ = identities.withLock { $0.removeValue(forKey: hash) }
  }
}
