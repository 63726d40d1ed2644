import ContentModel
import DocumentModel
import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Damaged content is repaired by the devices themselves (DESIGN.md §2, invariant 5; issue 14):
/// a local blob and a hub blob, each damaged by one flipped byte.
@Suite("Damaged content, repaired without a person")
struct HubRepairTests {
  @Test(
    """
    A local blob and hub blobs damaged by one flipped byte: conflict versions read right or \
    fail, never wrong; every device converges and the hub's copies are repaired
    """,
    .needs(), .docsyncOnly)
  func damagedLocalAndHubBlobsAreRepaired() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try makeConflicts(library, a, b, paths: ["doc.txt"])
      let older = edit("doc.txt", by: a)
      let current = edit("doc.txt", by: b)
      let name = try #require(try versionNames(b, of: "doc.txt").first)
      let version = ".versions/doc.txt/\(name)"
      #expect(try read(b.path(version)) == older)

      // While nobody can put anything again: one flipped byte in the hub's copy of both
      // heads, and in B's own copy of the conflict version.
      try a.pause()
      try b.pause()
      let hub = HubBytes(library)
      try hub.damage(older)
      try hub.damage(current)
      try flipFirstByte(of: "\(b.state)/blobs/\(hex(older).prefix(2))/\(hex(older))")
      expectRightOrError(b, version, older)

      // A new device meets the damaged hub copies: it reports them and waits, saying why.
      let c = try library.device("tablet")
      #expect(try c.trySync(timeout: 4).status != 0)
      // The sync's timeout can end before the first fetch has met the damage on a busy
      // machine (it was "fetching" then); the reason must come, so wait for it.
      let damaged = DeviceStatus.Waiting(
        path: "doc.txt", version: nil, reason: "damaged on the hub")
      var waiting = try c.status().waiting ?? []
      let deadline = Date().addingTimeInterval(30)
      while !waiting.contains(damaged) && Date() < deadline {
        usleep(200_000)
        waiting = try c.status().waiting ?? []
      }
      #expect(waiting.contains(damaged), "\(waiting)")
      let text = try check(
        c.asOwner([try MountFixture.docsyncBinary(), "status", c.mountPoint]), env: c.environment
      ).stdout
      #expect(text.contains("\n    doc.txt (damaged on the hub)\n"), "\(text)")
      #expect(text.contains("\n    .versions/doc.txt/\(name) ("), "\(text)")
      #expect(try hub.wantedCount() == 2)
      #expect(try hub.stored(older) == nil)
      expectRightOrError(c, version, older)

      // A and B hold good copies and put them again at their next round; nobody else acts.
      try a.resume()
      try b.resume()
      try library.sync(c, b, a)
      for device in [a, b, c] {
        let deadline = Date().addingTimeInterval(30)
        while (try? read(device.path(version))) != older && Date() < deadline {
          expectRightOrError(device, version, older)
          usleep(200_000)
        }
        #expect(try read(device.path(version)) == older, "\(device.name)")
        #expect(try read(device.path("doc.txt")) == current, "\(device.name)")
        #expect(try device.status().waiting == [], "\(device.name)")
      }
      try expectSameTree(a, b)
      try expectSameTree(a, c)
      #expect(try hub.stored(older) == Array(older.utf8))
      #expect(try hub.stored(current) == Array(current.utf8))
      #expect(try hub.wantedCount() == 0)
    }
  }

  /// Reading a conflict version whose content is damaged or missing here gives its bytes or an
  /// error, never other bytes.
  private func expectRightOrError(
    _ device: Device, _ version: String, _ good: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    if let text = try? read(device.path(version)) {
      #expect(text == good, "\(device.name) read wrong bytes", sourceLocation: sourceLocation)
    }
  }

  private func hex(_ content: String) -> String { ContentHash(of: Array(content.utf8)).hex }

  /// Rewrites the first byte in place, as a disk error would.
  private func flipFirstByte(of path: String) throws {
    let descriptor = open(path, O_RDWR)
    guard descriptor >= 0 else { throw TestFailure("open \(path): \(errnoText(errno))") }
    defer { close(descriptor) }
    var byte: UInt8 = 0
    guard pread(descriptor, &byte, 1, 0) == 1 else { throw TestFailure("pread \(path)") }
    byte ^= 0x20
    guard pwrite(descriptor, &byte, 1, 0) == 1 else { throw TestFailure("pwrite \(path)") }
  }
}

/// The bytes a library's hub stores, read and damaged from outside it (the sqlite3 program on
/// the hub file, psql as the cluster's administrator), as a failing disk or a meddling tool.
struct HubBytes {
  let library: Library

  init(_ library: Library) { self.library = library }

  private var isPostgres: Bool { library.hub.hasPrefix("postgres") }

  /// The id of the one chunk that holds `content` (a short text), as a device names it.
  static func chunkID(_ content: String) -> String {
    ObjectHasher().id(of: Array(content.utf8), kind: .chunk).hex
  }

  /// One flipped byte in the hub's copy of `content` (which fits in one chunk): in its object,
  /// when the hub has it as one, else in the first chunk of its blob.
  func damage(_ content: String) throws {
    var bytes = Array(content.utf8)
    bytes[0] ^= 0x20
    let key = ContentHash(of: Array(content.utf8)).hex
    let id = Self.chunkID(content)
    if try storedObject(id) != nil {
      // A raw frame: the frame byte 0, then the bytes (a short text does not compress).
      let frame = "00" + hexOf(bytes)
      if isPostgres {
        try psql(
          """
          UPDATE docsync.objects SET data = '\\x\(frame)'::bytea
          WHERE int8send(key) || rest = '\\x\(id)'::bytea
          """)
      } else {
        // Held in its row, as objects stored before packs are, its pack's copy no longer named.
        try sqlite("UPDATE objects SET data = X'\(frame)', pack = NULL WHERE id = X'\(id)'")
      }
      return
    }
    if isPostgres {
      try psql(
        """
        UPDATE docsync.chunks SET data = '\\x\(hexOf(bytes))'::bytea WHERE index = 0 AND upload =
          (SELECT upload FROM docsync.blobs WHERE hash = '\\x\(key)'::bytea)
        """)
    } else {
      try sqlite(
        """
        UPDATE chunks SET data = X'\(hexOf(bytes))' WHERE "index" = 0 AND upload =
          (SELECT upload FROM blobs WHERE hash = X'\(key)')
        """)
    }
  }

  /// The stored frame of object `id` (hex), or nil.
  private func storedObject(_ id: String) throws -> [UInt8]? {
    if !isPostgres {
      // On the SQLite hub, in a pack file beside the hub (or in the row, stored before packs).
      let place = try sqlite(
        #"SELECT coalesce(pack, ''), coalesce("offset", 0), coalesce(length, 0) FROM objects "#
          + "WHERE id = X'\(id)'"
      ).trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|")
      if place.count == 3, !place[0].isEmpty, let offset = Int(place[1]), let length = Int(place[2])
      {
        let file = try FileHandle(
          forReadingFrom: URL(fileURLWithPath: library.hub + ".packs/" + place[0]))
        defer { try? file.close() }
        try file.seek(toOffset: UInt64(offset))
        return Array(try file.read(upToCount: length) ?? Data())
      }
    }
    let output =
      isPostgres
      ? try psql(
        """
        SELECT encode(data, 'hex') FROM docsync.objects
        WHERE int8send(key) || rest = '\\x\(id)'::bytea
        """)
      : try sqlite("SELECT lower(hex(data)) FROM objects WHERE id = X'\(id)'")
    let text = output.trimmingCharacters(in: .whitespacesAndNewlines)
    return text.isEmpty ? nil : bytes(fromHex: text)
  }

  /// The stored bytes of `content` (a short text): its object's, without the raw frame's
  /// byte, or its blob's; nil when the hub has neither.
  func stored(_ content: String) throws -> [UInt8]? {
    if let frame = try storedObject(Self.chunkID(content)) {
      return frame.first == 0 ? Array(frame.dropFirst()) : frame
    }
    let key = ContentHash(of: Array(content.utf8)).hex
    let output =
      isPostgres
      ? try psql(
        """
        SELECT coalesce(string_agg(encode(c.data, 'hex'), '' ORDER BY c.index), '')
        FROM docsync.blobs AS b LEFT JOIN docsync.chunks AS c ON c.upload = b.upload
        WHERE b.hash = '\\x\(key)'::bytea GROUP BY b.hash
        """)
      : try sqlite(
        """
        SELECT coalesce(group_concat(lower(hex(data)), ''), '') FROM
          (SELECT c.data FROM blobs AS b JOIN chunks AS c ON c.upload = b.upload
           WHERE b.hash = X'\(key)' ORDER BY c."index")
        HAVING count(*) > 0
        """)
    let text = output.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !text.isEmpty else { return nil }
    return bytes(fromHex: text)
  }

  private func bytes(fromHex text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
      let next = text.index(index, offsetBy: 2)
      bytes.append(UInt8(text[index..<next], radix: 16)!)
      index = next
    }
    return bytes
  }

  /// How many blobs and objects the hub waits for a device to put again.
  func wantedCount() throws -> Int {
    let output =
      try isPostgres
      ? psql(
        "SELECT (SELECT count(*) FROM docsync.wanted) + (SELECT count(*) FROM docsync.wanted_objects)"
      )
      : sqlite(
        "SELECT (SELECT count(*) FROM wanted) + (SELECT count(*) FROM wanted_objects)")
    return Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
  }

  private func hexOf(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
  }

  @discardableResult
  private func sqlite(_ sql: String) throws -> String {
    try check(["sqlite3", library.hub, sql]).stdout
  }

  @discardableResult
  private func psql(_ sql: String) throws -> String {
    guard let admin = TestPostgres.adminURL, var components = URLComponents(string: admin),
      let database = URLComponents(string: library.hub)?.path
    else { throw TestFailure("no PostgreSQL administrator for \(library.hub)") }
    components.path = database
    guard let url = components.string else { throw TestFailure("bad URL \(admin)") }
    return try check(["psql", url, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql]).stdout
  }
}
