import DocumentModel
import Glibc
import Synchronization

/// The files (blobs and working files) this run checked against a hash, or wrote from bytes it
/// hashed as it wrote them, as their files were then: a file still in that state holds what
/// the hash says, so it need not be read and hashed again (any change to a file, even a byte
/// written in place with its times put back, changes its change time).
///
/// For a large blob written here it also keeps the hub's check of each chunk's raw frame,
/// computed from the bytes as they were written (``ContentStore/frameChecks(of:_:)``).
final class CheckedBlobs: Sendable {
  private let identities = Mutex<
    [ContentHash: (identity: BlobIdentity, frames: [Int64: (length: Int, check: [UInt8])])]
  >([:])

  /// Notes the file at `path`, just written from bytes that hash to `hash` (and whose chunks'
  /// frames have the checks `frames`, by offset).
  func note(
    _ hash: ContentHash, path: String, frames: [Int64: (length: Int, check: [UInt8])] = [:]
  ) {
    var info = stat()
    guard stat(path, &info) == 0 else { return }
    identities.withLock { $0[hash] = (BlobIdentity(info), frames) }
  }

  /// Notes that the file in the state `identity` holds `hash`.
  func note(_ hash: ContentHash, _ identity: BlobIdentity) {
    identities.withLock { $0[hash] = (identity, [:]) }
  }

  /// Whether the file in the state `identity` was checked to hold `hash`.
  func holds(_ identity: BlobIdentity, _ hash: ContentHash) -> Bool {
    identities.withLock { $0[hash]?.identity == identity }
  }

  /// The frame checks noted with `hash`, while its file is in the state `identity`.
  func frames(_ identity: BlobIdentity, _ hash: ContentHash) -> [Int64: (
    length: Int, check: [UInt8]
  )] {
    identities.withLock { known in
      guard let entry = known[hash], entry.identity == identity else { return [:] }
      return entry.frames
    }
  }

  func forget(_ hash: ContentHash) {
    _ = identities.withLock { $0.removeValue(forKey: hash) }
  }

  func forgetAll() {
    identities.withLock { $0.removeAll() }
  }
}
