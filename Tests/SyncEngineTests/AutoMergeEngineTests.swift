import DocumentModel
import Foundation
import Hub
import SyncEngine
import Testing

/// Automatic merging in the engine, three devices in process on one SQLite hub: the merge is
/// made by every device, stored once on the hub, and the person sees no conflict.
@Suite("automatic merging, three devices in process")
struct AutoMergeEngineTests {
  static let base = "title\none\ntwo\nthree\nfour\nend\n"

  /// The records of `path` on the hub that follow several versions.
  func hubMerges(_ library: Library, _ path: String) async throws -> [VersionRecord] {
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    var cursor = HubCursor.start
    var merges: [VersionRecord] = []
    while true {
      let page = try await hub.records(after: cursor, limit: 512)
      if page.records.isEmpty { return merges }
      for record in page.records {
        let decoded = try VersionRecord(
          decoding: record.payload, expectedID: VersionID(Digest256(bytes: record.id)!))
        if decoded.path == DocumentPath(path) && decoded.parents.count > 1 {
          merges.append(decoded)
        }
      }
      cursor = page.cursor
    }
  }

  @Test func threeDevicesEditingAtOnceMakeOneMergeRecord() async throws {
    let library = Library()
    let devices = try ["a", "b", "c"].map { try library.device($0) }
    try devices[0].write(".docsyncattributes", "*.md merge=text\n")
    try devices[0].write("plan.md", Self.base)
    for device in devices { try await device.sync() }
    for device in devices { device.engine.pause() }
    try devices[0].write("plan.md", "title\nONE by a\ntwo\nthree\nfour\nend\n")
    try devices[1].write("plan.md", "title\none\ntwo\nTHREE by b\nfour\nend\n")
    try devices[2].write("plan.md", "title\none\ntwo\nthree\nfour\nend\nappendix by c\n")
    // Each edit is a version waiting to go (recorded while paused) before any device resumes:
    // the heads then reach the hub as the devices resume, well within the merge's settle time.
    for device in devices {
      while device.engine.status().pendingUploads == 0 {
        try await Task.sleep(for: .milliseconds(10))
      }
    }
    for device in devices { device.engine.resume() }
    for device in devices { try await device.sync() }
    for device in devices { try await device.sync() }
    let merged = "title\nONE by a\ntwo\nTHREE by b\nfour\nend\nappendix by c\n"
    for device in devices {
      #expect(try device.read("plan.md") == merged)
      #expect(device.engine.conflicts().isEmpty)
      // Events say it merged by itself, and never that it was a conflict for the person.
      let kinds = device.engine.events.events(after: 0).map(\.kind)
      #expect(
        kinds.contains { if case .merged(DocumentPath("plan.md"), _) = $0 { true } else { false } },
        "\(kinds)")
      #expect(!kinds.contains { if case .conflict = $0 { true } else { false } }, "\(kinds)")
    }
    let merges = try await hubMerges(library, "plan.md")
    #expect(merges.count == 1, "\(merges)")
    #expect(merges.first?.deviceName == AutoMerge.deviceName)
    // Named as chunks, alike on every device: the hub has its root, and the record says so.
    let root = try #require(merges.first?.chunks)
    #expect(root.scheme == .current && root.size == UInt64(merged.utf8.count))
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    #expect(try await hub.missingObjects([root.id.bytes]).isEmpty)
    for device in devices { await device.stop() }
  }

  @Test func anOverlapIsReportedAsAConflictOnceTheMergeFailed() async throws {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    try a.write(".docsyncattributes", "*.md merge=text\n")
    try a.write("plan.md", Self.base)
    try await a.sync()
    try await b.sync()
    b.engine.pause()
    try a.write("plan.md", "title\none by a\ntwo\nthree\nfour\nend\n")
    try await a.sync()
    try await Task.sleep(for: .milliseconds(20))
    try b.write("plan.md", "title\none by b\ntwo\nthree\nfour\nend\n")
    b.engine.resume()
    for device in [b, a, b, a] { try await device.sync() }
    for device in [a, b] {
      #expect(device.engine.conflicts()[DocumentPath("plan.md")]?.count == 1)
      let conflicts = device.engine.events.events(after: 0).compactMap { event -> [String]? in
        guard case .conflict(DocumentPath("plan.md"), _, 1, let devices) = event.kind else {
          return nil
        }
        return devices
      }
      #expect(conflicts == [["b", "a"]], "\(device.engine.events.events(after: 0))")
    }
    await a.stop()
    await b.stop()
  }
}
