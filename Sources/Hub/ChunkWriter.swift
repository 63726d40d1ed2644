import Dispatch
import Synchronization

/// Writes a copy's chunks into a descriptor on a thread of its own, in order, one chunk behind
/// the reader: a copy around the page cache waits for the disk at every write, and this way it
/// reads and hashes the next chunk meanwhile.
final class ChunkWriter: Sendable {
  /// How many chunk buffers the reader and the writer share.
  static let buffers = 2

  private let descriptor: Int32
  private let owner: BlobFile.Owner
  private let queue = DispatchQueue(label: "docsync.chunk-writer")
  // Counts free buffers. Made at 0 and raised: libdispatch traps when a semaphore goes away
  // below the value it was made with, which a copy cut short by an error leaves it.
  private let free = DispatchSemaphore(value: 0)
  private let failure = Mutex<HubError?>(nil)

  init(_ descriptor: Int32, of owner: BlobFile.Owner) {
    self.descriptor = descriptor
    self.owner = owner
    for _ in 0..<Self.buffers { free.signal() }
  }

  /// Waits until one of the buffers is free again, which for the n-th call is buffer
  /// n % ``buffers``: chunks are written in the order they were given.
  func waitForBuffer() {
    free.wait()
  }

  /// The first write that failed, after which nothing more is written.
  var error: HubError? { failure.withLock { $0 } }

  /// Writes `bytes` at `offset` after every chunk given before; the buffer is the writer's
  /// until ``waitForBuffer()`` hands it back.
  func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
    nonisolated(unsafe) let bytes = bytes
    queue.async { [self] in
      if error == nil {
        do throws(HubError) {
          try BlobFile.write(descriptor, bytes, at: offset, of: owner)
        } catch {
          failure.withLock { $0 = error }
        }
      }
      free.signal()
    }
  }

  /// Waits for every chunk given so far; throws the first write's failure.
  func finish() throws(HubError) {
    queue.sync {}
    if let error { throw error }
  }
}
