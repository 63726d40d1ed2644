import DocumentModel
import Foundation
import Glibc
import Hub
import SyncEngine
import Testing

/// Versions recorded as blobs, then converted on the hub into chunks (their twins): a device
/// fetches them as chunks and moves only those it lacks.
@Suite("blob twins, in process")
struct BlobTwinFetchTests {
  /// Text of `count` bytes that compresses about as source code does, different for each seed.
  static func text(_ count: Int, seed: UInt64) -> [UInt8] {
    let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789 \n".utf8)
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    return (0..<count).map { _ in
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      return letters[Int(state % UInt64(letters.count))]
    }
  }

  /// All of a file (`Device.read` reads its first MiB).
  static func readAll(_ device: Device, _ path: String) throws -> [UInt8] {
    let file = try device.fileSystem.open(
      inode: try device.inode(path), flags: O_RDONLY, caller: device.me)
    defer { device.fileSystem.release(handle: file.handle) }
    var bytes: [UInt8] = []
    while true {
      let part = try device.fileSystem.read(
        handle: file.handle, offset: Int64(bytes.count), count: 1 << 20)
      if part.isEmpty { return bytes }
      bytes += part
    }
  }

  @Test func aConvertedVersionMovesAsTheChunksADeviceLacks() async throws {
    let library = Library()
    // A device that records as before chunks: every version is a whole blob on the hub.
    let old = try library.device("old", chunks: false)
    let b = try library.device("b")
    var content = Self.text(2 << 20, seed: 3)
    try old.write("big.txt", String(decoding: content, as: UTF8.self))
    try await old.sync()
    try await b.sync()
    #expect(try Self.readAll(b, "big.txt") == content)
    b.engine.pause()
    for edit in 1...4 {
      let at = edit * 300_001
      for offset in 0..<20 { content[at + offset] = UInt8(ascii: "A") + UInt8(edit) }
      try old.write("big.txt", String(decoding: content, as: UTF8.self))
      try await old.sync()
    }
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    #expect(try await hub.convertAllBlobs().converted == 5)
    #expect(try await hub.blobRoots([HubHash.sha256(content)]).count == 1)

    let before = b.engine.status().contentBytesReceived
    b.engine.resume()
    try await b.sync()
    #expect(try Self.readAll(b, "big.txt") == content)
    let moved = b.engine.status().contentBytesReceived - before
    // It learnt the twin's chunks: it can put them again should the hub lose them.
    #expect(try b.store.chunkList(hash: HubHash.sha256(content)) != nil)

    // A device that holds none of it fetches every chunk of the twin.
    let c = try library.device("c")
    try await c.sync()
    #expect(try Self.readAll(c, "big.txt") == content)
    let whole = c.engine.status().contentBytesReceived
    #expect(whole > 500_000, "\(whole) bytes for all of a 2 MiB text")
    #expect(moved * 4 < whole, "\(moved) bytes moved for four small edits, \(whole) for all")
    await old.stop()
    await b.stop()
    await c.stop()
  }

  /// A twin's chunk damaged on the hub is put again by a device that holds the content only
  /// as the blob it fetched before the conversion: it cuts what it holds to find the chunk.
  @Test func aDamagedTwinChunkIsRepairedByADeviceThatHeldTheOldBlob() async throws {
    let library = Library()
    let old = try library.device("old", chunks: false)
    let b = try library.device("b")
    let content = Self.text(600_000, seed: 5)
    try old.write("doc.txt", String(decoding: content, as: UTF8.self))
    try await old.sync()
    try await b.sync()
    #expect(try Self.readAll(b, "doc.txt") == content)
    let path = library.folder + "/hub.sqlite"
    #expect(try await SQLiteHub(path: path).convertAllBlobs().converted == 1)
    // One chunk of the twin, its row made to hold other bytes than its check says.
    try sqlite(
      path,
      """
      UPDATE objects SET data = X'0001020304', pack = NULL
      WHERE rowid = (SELECT min(rowid) FROM objects WHERE refs IS NULL)
      """)
    b.engine.pause()
    let c = try library.device("c")
    await #expect(throws: SyncError.self) { try await c.engine.synchronize(timeout: .seconds(2)) }
    #expect(try sqlite(path, "SELECT count(*) FROM wanted_objects") == "1\n")
    b.engine.resume()
    try await b.sync()
    #expect(try sqlite(path, "SELECT count(*) FROM wanted_objects") == "0\n")
    try await c.sync()
    #expect(try Self.readAll(c, "doc.txt") == content)
    await old.stop()
    await b.stop()
    await c.stop()
  }
}
