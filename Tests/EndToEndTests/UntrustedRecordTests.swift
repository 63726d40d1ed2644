import DocumentModel
import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Records that other devices put on the hub are checked field by field before a device stores
/// or applies them (issue 14): each bad one is refused with one log line, the rest of the page
/// applies, and the daemon stays up, also across a restart.
@Suite("Untrusted records")
struct UntrustedRecordTests {
  /// A record made by no docsync: valid id (the hash of its canonical bytes), one bad field.
  struct Forged {
    var label: String
    var record: VersionRecord
    /// What the refusing log line says, beyond the id; nil for records the decoder refuses
    /// (their device cannot be read).
    var reason: String?
  }

  static func forged(blob: ContentHash, size: UInt64, now: UInt64) -> [Forged] {
    let mallory = DeviceID(high: 0xBAD, low: 0xBAD)
    let file = VersionContent.file(hash: blob, size: size, executable: false)
    func record(
      _ components: [String], content: VersionContent = file, name: String = "mallory",
      modified: HLCTimestamp? = nil, origin: RenameOrigin? = nil, contentTime: Int64? = nil
    ) -> VersionRecord {
      VersionRecord(
        path: DocumentPath(components: components.map { Array($0.utf8) }), content: content,
        parents: [], modified: modified ?? HLCTimestamp(wallMilliseconds: now),
        deviceID: mallory, deviceName: name, origin: origin, contentTime: contentTime)
    }
    let year2100 = HLCTimestamp(wallMilliseconds: 4_102_444_800_000)
    let year2300 = HLCTimestamp(wallMilliseconds: 10_413_792_000_000)
    let pastInt64 = HLCTimestamp(
      wallMilliseconds: HLCTimestamp.maximumWallMilliseconds + 1, counter: .max)
    return [
      Forged(label: "..", record: record(["..", "escape.txt"]), reason: "is not a name"),
      Forged(label: ".", record: record(["dir", ".", "x.txt"]), reason: "is not a name"),
      Forged(label: "empty", record: record(["dir", "", "x.txt"]), reason: nil),
      Forged(label: "NUL", record: record(["nul\0.txt"]), reason: "is not a name"),
      Forged(label: "slash", record: record(["a/b.txt"]), reason: nil),
      Forged(
        label: "256 bytes", record: record([String(repeating: "l", count: 256)]),
        reason: "256 bytes"),
      Forged(
        label: ".versions", record: record([".versions", "x.txt"]), reason: "reserved .versions"),
      Forged(
        label: "size",
        record: record(["huge.txt"], content: .file(hash: blob, size: .max, executable: false)),
        reason: "content size"),
      Forged(
        label: "2100", record: record(["future.txt"], modified: year2100), reason: "2100-01-01"),
      Forged(
        label: "2300", record: record(["far-future.txt"], modified: year2300),
        reason: "past the year 2262"),
      Forged(
        label: "past Int64", record: record(["overflow.txt"], modified: pastInt64),
        reason: "past the year 2262"),
      Forged(
        label: "device name", record: record(["name.txt"], name: "forged\nrefused line"),
        reason: "device name"),
      Forged(
        label: "origin",
        record: record(
          ["renamed.txt"],
          origin: RenameOrigin(
            path: DocumentPath("../../etc/passwd"), version: VersionID(.sha256([1])))),
        reason: "rename origin"),
      Forged(
        label: "time on a deletion",
        record: record(["gone.txt"], content: .deletion, contentTime: 1), reason: "file time"),
    ]
  }

  /// Appends records to the SQLite hub as a device would, through the sqlite3 program: the
  /// hub keeps what it is given, and only the devices can refuse it.
  static func putOnHub(_ hub: String, _ records: [VersionRecord]) throws {
    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    var sql = "BEGIN IMMEDIATE;\n"
    for record in records {
      sql += "INSERT INTO records (id, payload) VALUES (X'\(hex(record.id.bytes))', "
      sql += "X'\(hex(record.encoded))');\n"
      if let hash = record.content.blobHash {
        sql += "INSERT INTO record_blobs (seq, position, hash) "
        sql += "VALUES (last_insert_rowid(), 0, X'\(hex(hash.bytes))');\n"
      }
    }
    try check(["sqlite3", "-bail", "-cmd", ".timeout 10000", hub], stdin: sql + "COMMIT;\n")
  }

  static func wallMilliseconds() -> UInt64 {
    UInt64(Date().timeIntervalSince1970 * 1000)
  }

  @Test(
    "Each bad hub record is refused and logged; the page applies, the daemon stays up, syncs",
    .needs("sqlite3"), .docsyncOnly)
  func badRecordsAreRefusedAndTheDeviceKeepsSyncing() throws {
    try Library.with(programs: ["sqlite3"], hub: .sqlite) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("before.txt"), "synced before\n")
      try library.sync(a, b)

      let content = Array("synced before\n".utf8)
      let forged = Self.forged(
        blob: ContentHash(of: content), size: UInt64(content.count), now: Self.wallMilliseconds())
      // A well-formed record whose counter is full: accepted, and the next edit of that file
      // must move to the next millisecond rather than trap.
      let fullCounter = VersionRecord(
        path: DocumentPath("counter.txt"),
        content: .file(
          hash: ContentHash(of: content), size: UInt64(content.count), executable: false),
        parents: [],
        modified: HLCTimestamp(wallMilliseconds: Self.wallMilliseconds(), counter: .max),
        deviceID: DeviceID(high: 0xBAD, low: 0xBAD), deviceName: "mallory")
      let half = forged.count / 2
      try Self.putOnHub(library.hub, forged[..<half].map(\.record))
      try Self.putOnHub(library.hub, [fullCounter])
      // A's next version lands in the middle of B's page, between forged records.
      try write(a.path("after.txt"), "made after the forged records\n")
      try a.sync()
      try Self.putOnHub(library.hub, forged[half...].map(\.record))
      try write(a.path("last.txt"), "made after all of them\n")
      try library.sync(a, b, a)

      for device in [a, b] {
        #expect(try read(device.path("after.txt")) == "made after the forged records\n")
        #expect(try read(device.path("last.txt")) == "made after all of them\n")
        #expect(try read(device.path("counter.txt")) == "synced before\n")
        let names = try FileManager.default.contentsOfDirectory(atPath: device.mountPoint)
          .filter { $0 != ".versions" }
        #expect(
          Set(names) == ["before.txt", "after.txt", "last.txt", "counter.txt"],
          "\(device.name) shows \(names.sorted())")
        #expect(try findVersions(device).isEmpty, "\(device.name)")
        #expect(try device.status().state == "up to date", "\(device.name)")
        let lines = device.log().split(separator: "\n")
        for bad in forged {
          let naming = lines.filter { $0.contains(bad.record.id.hex) }
          #expect(
            naming.count == 1, "\(device.name): \(bad.label) is named by \(naming.count) lines")
          guard let line = naming.first else { continue }
          #expect(line.contains("refused"), "\(device.name): \(line)")
          if let reason = bad.reason {
            // The device's name as sent, made printable: a newline in it cannot forge a line.
            let name = RecordCheck.printable(bad.record.deviceName.utf8, limit: 64)
            #expect(line.contains(name) && line.contains(reason), "\(device.name): \(line)")
            #expect(line.contains(bad.record.deviceID.description), "\(device.name): \(line)")
          }
        }
      }
      try expectSameTree(a, b)
      for device in [a, b] {
        let outside = (device.mountPoint as NSString).deletingLastPathComponent + "/escape.txt"
        #expect(!FileManager.default.fileExists(atPath: outside))
      }

      // The full counter: B's edit of that file is later than it, and reaches A.
      try write(b.path("counter.txt"), "desktop's edit\n")
      try library.sync(b, a)
      #expect(try read(a.path("counter.txt")) == "desktop's edit\n")
      #expect(try findVersions(a).isEmpty)

      // A restart loads what was stored: no crash, no refused record among them, still syncing.
      let pid = try b.daemonPID()
      #expect(kill(pid, 0) == 0, "B's daemon died")
      try b.unmount()
      try b.mount()
      try write(b.path("restarted.txt"), "after a restart\n")
      try library.sync(b, a)
      #expect(try read(a.path("restarted.txt")) == "after a restart\n")
      #expect(try read(b.path("counter.txt")) == "desktop's edit\n")
      let refusals = b.log().split(separator: "\n").filter { $0.contains(forged[0].record.id.hex) }
      #expect(refusals.count == 1, "refused again after the restart: \(refusals)")
      try expectSameTree(a, b)
    }
  }

  @Test(
    "A record from a newer docsync: sync fails with one line that says to upgrade, nothing skips",
    .needs("sqlite3"), .docsyncOnly)
  func aRecordFromANewerDocsyncAsksForAnUpgrade() throws {
    try Library.with(programs: ["sqlite3"], hub: .sqlite) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("before.txt"), "synced before\n")
      try library.sync(a, b)
      // A folder record with one more optional field (tag 3) than this docsync knows: what a
      // later docsync sends. Its id is the hash of its bytes, as any device checks.
      let record = VersionRecord(
        path: DocumentPath("from-a-newer-docsync"), content: .directory, parents: [],
        modified: HLCTimestamp(wallMilliseconds: Self.wallMilliseconds()),
        deviceID: DeviceID(high: 0x5EE, low: 0x5EE), deviceName: "newer")
      let payload = record.encoded + [3, 0x01, 0x02]
      let id = Digest256.sha256(payload).bytes
      func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
      try check(
        ["sqlite3", "-bail", "-cmd", ".timeout 10000", library.hub],
        stdin: "INSERT INTO records (id, payload) VALUES (X'\(hex(id))', X'\(hex(payload))');\n")
      try write(a.path("after.txt"), "made after it\n")
      let result = try b.trySync(timeout: 5)
      #expect(result.status == 1, "\(result)")
      let line = result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
      #expect(!line.contains("\n"), "one line: \(line)")
      #expect(line.contains("made by a newer docsync"), "\(line)")
      #expect(line.contains("upgrade docsync on this device"), "\(line)")
      let status = try b.status()
      #expect(status.state == "cannot sync", "\(status.state)")
      #expect(status.cannotSyncReason?.contains("upgrade docsync") == true, "status says why")
      // Nothing past the record is applied as if it were not there; the daemon stays up.
      #expect(!FileManager.default.fileExists(atPath: b.path("from-a-newer-docsync")))
      #expect(try read(b.path("before.txt")) == "synced before\n")
      #expect(kill(try b.daemonPID(), 0) == 0, "the daemon died")
    }
  }
}
