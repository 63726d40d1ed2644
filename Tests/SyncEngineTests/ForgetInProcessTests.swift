import DocumentFileSystem
import DocumentModel
import Foundation
import Hub
import LocalStore
import SyncEngine
import Testing

/// `docsync forget` in process: a document and every version of it leave the hub and every
/// device, and a device that edited it offline keeps its edit.
@Suite("forget in process")
struct ForgetInProcessTests {
  @Test func aForgottenDocumentLeavesEveryDeviceButAnOfflineEditComesBack() async throws {
    let library = Library()
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    let (a, b, c) = (try library.device("a"), try library.device("b"), try library.device("c"))
    try a.write("secret.txt", "one\n")
    try await a.sync()
    try a.write("secret.txt", "two\n")
    try a.write("plan.md", "keep me\n")
    try await a.sync()
    try await b.sync()
    try await c.sync()
    #expect(try c.read("secret.txt") == "two\n")
    // B goes offline and edits the document; C stays online.
    b.engine.pause()
    try b.write("secret.txt", "b's offline edit\n")

    #expect(
      try await a.engine.forget(DocumentPath("secret.txt"), timeout: .seconds(20)).versions == 2)
    #expect((try? a.read("secret.txt")) == nil)
    #expect((try? historyNames(a, "secret.txt")) == nil)
    #expect(try await recordPaths(hub) == ["plan.md"])
    try await c.sync()
    #expect((try? c.read("secret.txt")) == nil)
    #expect((try? historyNames(c, "secret.txt")) == nil)
    #expect(c.engine.versionsOverTime(of: DocumentPath("secret.txt")).versions.isEmpty)

    b.engine.resume()
    try await b.sync()
    #expect(try b.read("secret.txt") == "b's offline edit\n")
    #expect(b.engine.versionsOverTime(of: DocumentPath("secret.txt")).versions.count == 1)
    for device in [a, c] {
      try await device.sync()
      #expect(try device.read("secret.txt") == "b's offline edit\n")
      #expect(device.engine.conflicts().isEmpty)
      #expect(try device.read("plan.md") == "keep me\n")
    }
    #expect(try await recordPaths(hub) == ["plan.md", "secret.txt"])
    for device in [a, b, c] { await device.stop() }
  }

  /// With the hub unreachable, a forget gives up with one line once the loop has had its
  /// retries, and nothing is forgotten; once the hub is back, it works.
  @Test func aForgetWithTheHubUnreachableSaysSoAndForgetsNothing() async throws {
    let library = Library()
    let hub = UnplugableHub(try SQLiteHub(path: library.folder + "/hub.sqlite"))
    let a = try Device(folder: library.folder + "/a", hub: hub, hubDescription: "test", name: "a")
    try a.write("secret.txt", "one\n")
    try await a.sync()
    hub.unplugged = true
    let started = ContinuousClock.now
    await #expect(throws: SyncError.self) {
      _ = try await a.engine.forget(DocumentPath("secret.txt"), timeout: .seconds(3600))
    }
    #expect(ContinuousClock.now - started < .seconds(60))
    #expect(try a.read("secret.txt") == "one\n")
    hub.unplugged = false
    #expect(
      try await a.engine.forget(DocumentPath("secret.txt"), timeout: .seconds(20)).versions == 1)
    #expect((try? a.read("secret.txt")) == nil)
    a.engine.pause()
    await #expect(throws: SyncError.paused) {
      _ = try await a.engine.forget(DocumentPath("plan.md"), timeout: .seconds(20))
    }
    await a.stop()
  }

  /// A prune on one device: another stops listing what went at its next sync.
  @Test func aReleasedVersionLeavesAnotherDevicesHistory() async throws {
    let library = Library()
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    try await hub.setRetention(RetentionPolicy.keep(milliseconds: 0).serialized)
    let (a, b) = (try library.device("a"), try library.device("b"))
    for save in 1...3 {
      try a.write("plan.md", "save \(save)\n")
      try await a.sync()
    }
    try await b.sync()
    #expect(try historyNames(b, "plan.md").count == 2)
    _ = try await a.engine.prune(timeout: .seconds(20))
    try await b.sync()
    #expect((try? historyNames(b, "plan.md")) == nil)
    #expect(try b.read("plan.md") == "save 3\n")
    for device in [a, b] { await device.stop() }
  }

  func recordPaths(_ hub: SQLiteHub) async throws -> [String] {
    var cursor = HubCursor.start
    var paths: [String] = []
    while true {
      let page = try await hub.records(after: cursor, limit: 100)
      if page.records.isEmpty { break }
      for record in page.records {
        let digest = try #require(Digest256(bytes: record.id))
        let version = try VersionRecord(decoding: record.payload, expectedID: VersionID(digest))
        paths.append(version.path.description)
      }
      cursor = page.cursor
    }
    return Array(Set(paths)).sorted()
  }

  func historyNames(_ device: Device, _ path: String) throws -> [String] {
    try RetentionInProcessTests().historyNames(device, path)
  }
}
