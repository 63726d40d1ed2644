import ContentModel
import DocumentModel
import Foundation
import Hub
import SyncEngine
import Testing

/// Content that a docsync of sessions 40 to 44 recorded, its tree named by BLAKE2b: a device of
/// today fetches it as chunks, shows it, copies of it upload nothing (the kept list keeps its
/// scheme), and new content it saves is named by BLAKE3.
@Suite("BLAKE2b trees from before BLAKE3")
struct Blake2bTreeTests {
  /// 600 KiB of numbered lines: several chunks under one node.
  static let text: String = (0..<12_000).map { line in
    "line \(line): \(String(UInt64(line) &* 0x9E37_79B9_7F4A_7C15, radix: 16))\n"
  }.joined()

  /// Puts `text` on the hub as objects named by BLAKE2b and appends the record a session-44
  /// device would have made for it at `path`.
  static func recordAsSession44(_ text: String, at path: String, hub: SQLiteHub) async throws {
    let bytes = Array(text.utf8)
    let legacy = ObjectHasher(scheme: .blake2b)
    let compressor = ObjectCompressor()
    var chunks: [HubObject] = []
    var splitter = ContentSplitter(hasher: legacy)
    let keep = { (plain: UnsafeRawBufferPointer, entry: ManifestEntry) in
      chunks.append(HubObject(id: entry.id.bytes, data: compressor.frame(plain)))
    }
    bytes.withUnsafeBytes { splitter.append($0, keep) }
    let tree = ManifestBuilder(hasher: legacy).build(chunks: splitter.finish(keep))
    #expect(tree.root.scheme == .blake2b && tree.root.height == 1 && chunks.count > 3)
    let nodes = tree.nodes.map {
      HubObject(
        id: $0.id.bytes, data: compressor.frame($0.encoded),
        references: $0.node.entries.map(\.id.bytes))
    }
    try await hub.putObjects(chunks + nodes)
    let record = VersionRecord(
      path: DocumentPath(path),
      content: .file(hash: ContentHash(of: bytes), size: UInt64(bytes.count), executable: false),
      parents: [],
      modified: HLCTimestamp(wallMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000)),
      deviceID: DeviceID(high: 44, low: 44), deviceName: "session 44", chunks: tree.root)
    try await hub.append([
      HubRecord(id: record.id.bytes, payload: record.encoded, blobs: [tree.root.id.bytes])
    ])
  }

  /// Every record on the hub at `path`, decoded.
  static func records(at path: String, hub: SQLiteHub) async throws -> [VersionRecord] {
    let page = try await hub.records(after: .start, limit: 1_000)
    return try page.records.map {
      try VersionRecord(decoding: $0.payload, expectedID: VersionID(Digest256(bytes: $0.id)!))
    }.filter { $0.path == DocumentPath(path) }
  }

  @Test func aBlake2bTreeArrivesAndItsCopyUploadsNothing() async throws {
    let library = Library()
    let hubPath = library.folder + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    try await Self.recordAsSession44(Self.text, at: "old.txt", hub: hub)
    let b = try library.device("b")
    try await b.sync()
    #expect(try b.read("old.txt") == Self.text)
    #expect(b.engine.status().waiting.isEmpty)

    // A copy of it: the same content, whose list this device keeps in BLAKE2b, names the tree
    // the hub has, and no object moves.
    let objects = try sqlite(hubPath, "SELECT count(*) FROM objects")
    try b.write("copy.txt", Self.text)
    try await b.sync()
    #expect(try sqlite(hubPath, "SELECT count(*) FROM objects") == objects)
    let copies = try await Self.records(at: "copy.txt", hub: hub)
    #expect(copies.count == 1 && copies.first?.chunks?.scheme == .blake2b)

    // New content is named by BLAKE3, and another device of today reads both.
    try b.write("old.txt", Self.text + "one more line\n")
    try await b.sync()
    let versions = try await Self.records(at: "old.txt", hub: hub)
    #expect(
      versions.compactMap(\.chunks?.scheme).sorted { $0.rawValue < $1.rawValue } == [
        .blake2b, .blake3,
      ])
    let c = try library.device("c")
    try await c.sync()
    #expect(try c.read("old.txt") == Self.text + "one more line\n")
    #expect(try c.read("copy.txt") == Self.text)
    await b.stop()
    await c.stop()
  }
}
