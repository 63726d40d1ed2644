import DocumentModel
import Glibc
import Synchronization

/// The files (blobs and working files) this run checked against a hash, or wrote from bytes it
/// hashed as it wrote them, as their files were then: a file still in that state holds what
/// the hash says, so it need not be read and hashed again (any change to a file, even a byte
/// written in place with its times put back, changes its change time).
final class CheckedBlobs: Sendable {
  private let identities = Mutex<[ContentHash: BlobIdentity]>([:])

  /// Notes the file at `path`, just written from bytes that hash to `hash`.
  func note(_ hash: ContentHash, path: String) {
    var info = stat()
    guard stat(path, &info) == 0 else { return }
    note(hash, BlobIdentity(info))
  }

  /// Notes that the file in the state `identity` holds `hash`.
  func note(_ hash: ContentHash, _ identity: BlobIdentity) {
    identities.withLock { $0[hash] = identity }
  }

  /// Whether the file in the state `identity` was checked to hold `hash`.
  func holds(_ identity: BlobIdentity, _ hash: ContentHash) -> Bool {
    identities.withLock { $0[hash] == identity }
  }

  func forget(_ hash: ContentHash) {
    _ = identities.withLock { $0.removeValue(forKey: hash) }
  }

  func forgetAll() {
    identities.withLock { $0.removeAll() }
  }
}
