import DocumentModel
import Glibc
import Synchronization

/// The files (blobs and working files) this run checked against a hash, or wrote from bytes it
/// hashed as it wrote them, as their files were then: a file still in that state holds what
/// the hash says, so it need not be read and hashed again (any change to a file, even a byte
/// written in place with its times put back, changes its change time).
///
/// For the latest large blobs written here it also keeps the hub's check of each chunk's raw
/// frame, computed from the bytes as they were written (``ContentStore/frameChecks(of:_:)``),
/// 24 bytes a chunk, at most ``framesKept`` chunks in all: a device offline for weeks must not
/// hold the checks of everything it recorded meanwhile (older ones are read back instead).
final class CheckedBlobs: Sendable {
  private struct State {
    var identities: [ContentHash: BlobIdentity] = [:]
    var frames: [ContentHash: [(offset: Int64, length: Int, check: UInt64)]] = [:]
    /// The hashes with frames, oldest first, and how many frames they hold together.
    var framed: [ContentHash] = []
    var frameCount = 0

    mutating func dropFrames(_ hash: ContentHash) {
      guard let dropped = frames.removeValue(forKey: hash) else { return }
      frameCount -= dropped.count
      framed.removeAll { $0 == hash }
    }
  }

  private let state = Mutex(State())

  /// About 4 GiB of content in 64 KiB chunks.
  static let framesKept = 65_536

  /// Notes the file at `path`, just written from bytes that hash to `hash`, and the hub's checks
  /// of its chunks' raw frames (each an XXH64 value), in order.
  func note(
    _ hash: ContentHash, path: String,
    frames: [(offset: Int64, length: Int, check: UInt64)] = []
  ) {
    var info = stat()
    guard stat(path, &info) == 0 else { return }
    state.withLock { state in
      state.identities[hash] = BlobIdentity(info)
      state.dropFrames(hash)
      guard !frames.isEmpty, frames.count <= Self.framesKept else { return }
      state.frames[hash] = frames
      state.framed.append(hash)
      state.frameCount += frames.count
      while state.frameCount > Self.framesKept, let oldest = state.framed.first {
        state.dropFrames(oldest)
      }
    }
  }

  /// Notes that the file in the state `identity` holds `hash`.
  func note(_ hash: ContentHash, _ identity: BlobIdentity) {
    state.withLock { state in
      state.identities[hash] = identity
      state.dropFrames(hash)
    }
  }

  /// Whether the file in the state `identity` was checked to hold `hash`.
  func holds(_ identity: BlobIdentity, _ hash: ContentHash) -> Bool {
    state.withLock { $0.identities[hash] == identity }
  }

  /// The frame checks noted with `hash`, while its file is in the state `identity`.
  func frames(_ identity: BlobIdentity, _ hash: ContentHash) -> [(
    offset: Int64, length: Int, check: UInt64
  )] {
    state.withLock { state in
      guard state.identities[hash] == identity else { return [] }
      return state.frames[hash] ?? []
    }
  }

  /// Lets go of the frame checks of `hash` (the hub took its chunks, or declined to).
  func forgetFrames(_ hash: ContentHash) {
    state.withLock { $0.dropFrames(hash) }
  }

  func forget(_ hash: ContentHash) {
    state.withLock { state in
      state.identities.removeValue(forKey: hash)
      state.dropFrames(hash)
    }
  }

  func forgetAll() {
    state.withLock { $0 = State() }
  }
}
