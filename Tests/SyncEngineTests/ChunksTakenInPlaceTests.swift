import Foundation
import SyncEngine
import Testing

/// A large file whose chunks do not compress goes to the embedded hub in its blob's own file
/// (a hard link, each chunk's row naming its bytes there), so its bytes are written once; a
/// file that compresses goes into packs, compressed. Either way another device reads it whole.
@Suite("chunks taken in place, in process")
struct ChunksTakenInPlaceTests {
  static func random(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed | 1
    return (0..<count).map { _ in
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      return UInt8(truncatingIfNeeded: state)
    }
  }

  /// The bytes of every pack of the hub.
  static func packBytes(_ hub: String) throws -> Int {
    let folder = hub + ".packs"
    return try FileManager.default.contentsOfDirectory(atPath: folder).reduce(0) { total, name in
      let size = try FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size]
      return total + ((size as? NSNumber)?.intValue ?? 0)
    }
  }

  @Test func aLargeIncompressibleFileIsTakenInPlaceAndACompressibleOneIsPacked() async throws {
    let library = Library()
    let hub = library.folder + "/hub.sqlite"
    let a = try library.device("a")
    let b = try library.device("b")
    let large = Self.random(12 << 20, seed: 45)
    try a.write("large.bin", bytes: large)
    try await a.sync()
    let inPlace = try sqlite(
      hub, "SELECT count(*) FROM objects WHERE pack IS NOT NULL AND length(data) = 1")
    #expect((Int(inPlace.dropLast()) ?? 0) > 100, "each chunk's row names its bytes in place")
    // Written once: the packs hold the file and its manifest, not a second copy.
    let afterLarge = try Self.packBytes(hub)
    #expect(afterLarge >= large.count && afterLarge < large.count + (1 << 20))
    try await b.sync()
    #expect(try b.readBytes("large.bin") == large)

    // Text compresses: its chunks are framed, compressed, and appended to a pack.
    let text = Array(
      (0..<400_000).map { "line \($0) of a log that compresses well\n" }.joined().utf8)
    try a.write("log.txt", bytes: text)
    try await a.sync()
    #expect(
      try sqlite(hub, "SELECT count(*) FROM objects WHERE pack IS NOT NULL AND length(data) = 1")
        == inPlace)
    #expect(try Self.packBytes(hub) - afterLarge < text.count / 2)
    try await b.sync()
    #expect(try b.readBytes("log.txt") == text)

    // An edit in place of the large file: only the chunks around it move, and the new
    // version reads back whole on the other device.
    var edited = large
    edited[5_000_000] ^= 0xFF
    try a.write("large.bin", bytes: edited)
    try await a.sync()
    try await b.sync()
    #expect(try b.readBytes("large.bin") == edited)
    await a.stop()
    await b.stop()
  }
}
