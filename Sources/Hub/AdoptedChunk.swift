/// A chunk that a hub takes in place, in the file that holds it (``ObjectStore/adoptChunks(file:descriptor:chunks:framePrefix:)``):
/// its id, where its plain bytes lie in that file, and, when the caller computed it as it
/// wrote the file, what the hub's check of its frame is made of.
public struct AdoptedChunk: Sendable, Hashable {
  public let id: [UInt8]
  public let offset: Int64
  public let length: Int
  /// ``frameHash(prefix:bytes:)`` of the chunk, or nil: the hub then reads the chunk back to
  /// make its check. A large blob is written around the page cache, so reading it back is a
  /// second pass over the disk (a second of a 1 GiB push).
  public let frameHash: UInt64?

  public init(id: [UInt8], offset: Int64, length: Int, frameHash: UInt64? = nil) {
    self.id = id
    self.offset = offset
    self.length = length
    self.frameHash = frameHash
  }

  /// What the hub's check of a chunk stored as `prefix` followed by `bytes` is made of (XXH64),
  /// computed by whoever has the bytes in hand as they are written.
  public static func frameHash(prefix: [UInt8], bytes: UnsafeRawBufferPointer) -> UInt64 {
    ObjectCheck.hash64(prefix, bytes)
  }
}
