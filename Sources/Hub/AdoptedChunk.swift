/// A chunk that a hub takes in place, in the file that holds it (``ObjectStore/adoptChunks(file:descriptor:chunks:framePrefix:)``):
/// its id, and where its plain bytes lie in that file.
public struct AdoptedChunk: Sendable, Hashable {
  public let id: [UInt8]
  public let offset: Int64
  public let length: Int

  public init(id: [UInt8], offset: Int64, length: Int) {
    self.id = id
    self.offset = offset
    self.length = length
  }
}
