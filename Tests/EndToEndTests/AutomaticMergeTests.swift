import DocumentModel
import Foundation
import MountHarness
import Testing

/// Automatic merging as `.docsyncattributes` asks, through real mounts as the ordinary user:
/// devices that merge at once make one record, and what cannot merge stays a conflict.
@Suite("Automatic merging with .docsyncattributes", .docsyncOnly)
struct AutomaticMergeTests {
  static let base = "title\none\ntwo\nthree\nfour\nend\n"
  static let attributes = "*.md merge=text\n*.txt merge=union\n"

  /// The version records of `path` on the library's hub, read with `sqlite3` or `psql` (as the
  /// library's account) and checked against their ids.
  func hubRecords(_ library: Library, of path: String) throws -> [VersionRecord] {
    let rows: String
    if library.hub.hasPrefix("postgres") {
      rows = try check(
        [
          "psql", library.hub, "-At", "-F", "|", "-c",
          "SELECT encode(id, 'hex'), encode(payload, 'hex') FROM docsync.records",
        ], env: library.hubEnvironment
      ).stdout
    } else {
      rows = try check(
        ["sqlite3", "-readonly", library.hub, "SELECT hex(id) || '|' || hex(payload) FROM records"]
      ).stdout
    }
    return try rows.split(separator: "\n").compactMap { row in
      let fields = row.split(separator: "|").map { hexBytes(String($0)) }
      guard fields.count == 2, let id = fields[0].flatMap(Digest256.init(bytes:)),
        let payload = fields[1]
      else { throw TestFailure("unreadable hub row \(row)") }
      let record = try VersionRecord(decoding: payload, expectedID: VersionID(id))
      return record.path == DocumentPath(path) ? record : nil
    }
  }

  func hexBytes(_ text: String) -> [UInt8]? {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
      let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex) ?? text.endIndex
      guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
      bytes.append(byte)
      index = next
    }
    return bytes
  }

  /// Waits until `device` has recorded its local edits as versions to upload (it is paused).
  func waitForRecordedEdits(_ device: Device) throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while try device.status().pendingUploads == 0 {
      guard ContinuousClock.now < deadline else {
        throw TestFailure("\(device.name) did not record its edit")
      }
      usleep(20_000)
    }
  }

  @Test(
    "Three devices edit different lines at once: one merged document, no .versions, one record",
    .needs("find", "sqlite3", "psql"))
  func threeDevicesEditingAtOnceConvergeOnOneMergeRecord() throws {
    try Library.with { library in
      let devices = try ["laptop", "desktop", "tablet"].map { try library.device($0) }
      let (a, b, c) = (devices[0], devices[1], devices[2])
      try write(a.path(MergeAttributes.fileName), Self.attributes)
      try write(a.path("plan.md"), Self.base)
      try library.sync(a, b, c)
      for device in devices { try device.pause() }
      try write(a.path("plan.md"), "title\nONE by laptop\ntwo\nthree\nfour\nend\n")
      try write(b.path("plan.md"), "title\none\ntwo\nTHREE by desktop\nfour\nend\n")
      try write(c.path("plan.md"), "title\none\ntwo\nthree\nfour\nend\nappendix by tablet\n")
      // Each edit is a version waiting to go before any device resumes, so that the three
      // reach the hub within moments of each other, as when devices come online together.
      for device in devices { try waitForRecordedEdits(device) }
      for device in devices { try device.resume() }
      try library.sync(a, b, c, a, b, c)
      let merged = "title\nONE by laptop\ntwo\nTHREE by desktop\nfour\nend\nappendix by tablet\n"
      for device in devices {
        #expect(try read(device.path("plan.md")) == merged, "\(device.name)")
        #expect(try findVersions(device).isEmpty, "\(device.name)")
        #expect(try device.status().conflicts.isEmpty, "\(device.name)")
      }
      // Every device makes the same merge record; one that hears of it from the hub before its
      // own settle time ends takes that one and merges nothing itself.
      #expect(
        devices.contains { $0.log().contains("merged plan.md automatically") },
        "\(devices.map { $0.logTail() })")
      try expectSameTree(a, b)
      try expectSameTree(a, c)
      let merges = try hubRecords(library, of: "plan.md").filter { $0.parents.count > 1 }
      #expect(merges.count == 1, "\(merges)")
      #expect(merges.first?.parents.count == 3 && merges.first?.deviceName == "merge")
    }
  }

  @Test(
    "Overlaps stay a conflict under merge=text, merge=union keeps both, unmatched stays",
    .needs("find", "sh"))
  func whatCannotMergeStaysAConflict() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path(MergeAttributes.fileName), Self.attributes)
      let names = ["plan.md", "log.txt", "table.csv"]
      for name in names { try write(a.path(name), Self.base) }
      try library.sync(a, b)
      try b.pause()
      // plan.md and log.txt: the same line on both; table.csv: different lines, but no pattern.
      try write(a.path("plan.md"), "title\nlaptop's one\ntwo\nthree\nfour\nend\n")
      try write(a.path("log.txt"), "title\nlaptop's one\ntwo\nthree\nfour\nend\n")
      try write(a.path("table.csv"), "title\nONE\ntwo\nthree\nfour\nend\n")
      try a.sync()
      usleep(20_000)
      try write(b.path("plan.md"), "title\ndesktop's one\ntwo\nthree\nfour\nend\n")
      try write(b.path("log.txt"), "title\ndesktop's one\ntwo\nthree\nfour\nend\n")
      try write(b.path("table.csv"), "title\none\ntwo\nthree\nFOUR\nend\n")
      try b.resume()
      try library.sync(b, a, b)
      for device in [a, b] {
        #expect(try versionNames(device, of: "plan.md").count == 1, "\(device.name)")
        #expect(try versionNames(device, of: "table.csv").count == 1, "\(device.name)")
        let union = try read(device.path("log.txt"))
        #expect(union.contains("laptop's one\n") && union.contains("desktop's one\n"), "\(union)")
        #expect(!union.contains("<<<<<<<"), "\(union)")
        #expect(
          try findVersions(device).filter { $0.contains("log.txt") }.isEmpty, "\(device.name)")
        let markers = try read(device.path(".versions/plan.md/merged.md"))
        #expect(markers.contains("<<<<<<< current (desktop, "), "\(markers)")
      }
      #expect(try read(a.path("log.txt")) == read(b.path("log.txt")))
      #expect(a.log().contains("plan.md stays in conflict: 1 overlapping change"), "\(a.logTail())")
      // docsync versions names the views and the command that takes the merge.
      let binary = try MountFixture.docsyncBinary()
      let listing = try check([binary, "versions", a.path("plan.md")]).stdout
      let folder = "\(a.mountPoint)/.versions/plan.md"
      #expect(
        listing.contains("take it:   cp '\(folder)/merged.md' '\(a.mountPoint)/plan.md'"),
        "\(listing)")
      #expect(listing.contains("  base     base.md: "), "\(listing)")
      // A later edit of the pattern file takes effect: table.csv now merges by itself.
      try write(a.path(MergeAttributes.fileName), Self.attributes + "*.csv merge=text\n")
      try library.sync(a, b, a, b)
      for device in [a, b] {
        #expect(try read(device.path("table.csv")) == "title\nONE\ntwo\nthree\nFOUR\nend\n")
        #expect(
          try findVersions(device).filter { $0.contains("table.csv") }.isEmpty, "\(device.name)")
      }
    }
  }
}
