import DocumentFileSystem
import DocumentModel
import Foundation
import Glibc
import Hub
import SyncEngine
import Testing

/// Records with each field RecordCheck refuses, appended to the hub in a random order among a
/// device's ordinary edits (issue 14): each one is refused, the engine keeps going, and every
/// good record around them applies.
@Suite("untrusted records, in process")
struct UntrustedRecordsInProcessTests {
  @Test(arguments: [UInt64(1), 2, 3])
  func recordsWithABadFieldAreRefusedAndTheRestApplies(seed: UInt64) async throws {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    try a.write("doc.txt", "first\n")
    try await a.sync()
    try await b.sync()
    let first = try #require(a.engine.versions(of: DocumentPath("doc.txt"))?.current)
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    var random = Xorshift(state: seed &* 0x9E37_79B9_7F4A_7C15 | 1)
    for round in 0..<3 {
      let bad = Self.badRecords(after: first).shuffled(using: &random)
      let split = Int(random.next() % UInt64(bad.count + 1))
      try await append(bad[..<split], to: hub, content: first)
      try a.write("doc.txt", "edit \(round)\n")
      try await a.sync()
      try await append(bad[split...], to: hub, content: first)
      try await b.sync()
      #expect(try b.read("doc.txt") == "edit \(round)\n", "seed \(seed)")
    }
    // B's clock was not dragged ahead: its own next version is of now.
    try b.write("later.txt", "later\n")
    try await b.sync()
    try await a.sync()
    let later = try #require(b.engine.versions(of: DocumentPath("later.txt"))?.current)
    #expect(later.modified.wallMilliseconds < UInt64(Date().timeIntervalSince1970 * 1000) + 60_000)
    #expect(try a.read("later.txt") == "later\n")
    #expect(try rootNames(b) == ["doc.txt", "later.txt"])
    #expect(b.engine.status().conflicts.isEmpty)
    await a.stop()
    await b.stop()
  }

  /// One record per field RecordCheck refuses (and one for the root, which the decoding
  /// refuses), each with the id its bytes hash to, as another program could send it.
  static func badRecords(after parent: VersionRecord) -> [VersionRecord] {
    let now = UInt64(Date().timeIntervalSince1970 * 1000)
    let day: UInt64 = 86_400_000
    let hash = parent.content.blobHash!
    let file = VersionContent.file(hash: hash, size: parent.content.size ?? 0, executable: false)
    func record(
      _ path: [[UInt8]], content: VersionContent? = nil, parents: [VersionID] = [],
      modified: HLCTimestamp? = nil, deviceName: String = "intruder",
      origin: RenameOrigin? = nil, contentTime: Int64? = nil
    ) -> VersionRecord {
      let fields = { (id: VersionID) in
        VersionRecord(
          storedID: id, path: DocumentPath(components: path), content: content ?? file,
          parents: parents, modified: modified ?? HLCTimestamp(wallMilliseconds: now),
          deviceID: DeviceID(high: 7, low: 7), deviceName: deviceName, origin: origin,
          contentTime: contentTime)
      }
      return fields(VersionID(.sha256(fields(parent.id).encoded)))
    }
    let name = Array("bad".utf8)
    return [
      record([]),
      record([Array(".".utf8)]),
      record([Array("..".utf8), name]),
      record([[], name]),
      record([name + [0] + name]),
      record([Array("a/b".utf8)]),
      record([Array(repeating: 0x6C, count: 256)]),
      record(Array(repeating: Array(repeating: 0x70, count: 200), count: 21)),
      record([IgnoredNames.versionsFolder, name]),
      record([name], origin: RenameOrigin(path: DocumentPath("../outside"), version: parent.id)),
      record([name], content: .file(hash: hash, size: (1 << 50) + 1, executable: false)),
      record([name], content: .symlink(hash: hash, size: 5000)),
      record([name], content: .directory, contentTime: 1),
      record([name], deviceName: "bad\nname"),
      record([name], modified: HLCTimestamp(wallMilliseconds: 10_413_792_000_000, counter: .max)),
      record([name], modified: HLCTimestamp(wallMilliseconds: now + 2 * day)),
      record(
        parent.path.components, parents: [parent.id], modified: parent.modified,
        deviceName: "not later than its parent"),
    ]
  }

  /// Appends the records as another program could; each names the content of `version` on
  /// the hub as that version does (its chunk root, or its blob), so that the hub takes it.
  private func append(
    _ records: ArraySlice<VersionRecord>, to hub: SQLiteHub, content version: VersionRecord
  ) async throws {
    for record in records {
      let named =
        record.content.blobHash == version.content.blobHash
        ? version.chunks.map { [$0.id.bytes] } : nil
      try await hub.append([
        HubRecord(
          id: record.id.bytes, payload: record.encoded,
          blobs: named ?? record.content.blobHash.map { [$0.bytes] } ?? [])
      ])
    }
  }

  private func rootNames(_ device: Device) throws -> [String] {
    let root = DocumentFileSystem.rootInode
    let handle = try device.fileSystem.openDirectory(inode: root, caller: .current)
    defer { device.fileSystem.releaseDirectory(handle: handle) }
    var names: [String] = []
    try device.fileSystem.readDirectory(inode: root, handle: handle, offset: 0, plus: false) {
      let name = String(decoding: $0.name, as: UTF8.self)
      if name != "." && name != ".." && name != ".versions" { names.append(name) }
      return true
    }
    return names.sorted()
  }

  /// Deterministic order from a seed, so that a failing order can be replayed.
  struct Xorshift: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      return state
    }
  }
}
