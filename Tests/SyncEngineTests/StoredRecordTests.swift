import DocumentModel
import Foundation
import LocalStore
import Testing

/// Records an earlier docsync stored without checking them: the next start must neither trap
/// (a crash at every start) nor let them drag the clock (issue 14).
@Suite("records stored unchecked by an earlier docsync")
struct StoredRecordTests {
  @Test func aStartLeavesOutWhatWouldTrapAndIsNotDraggedByAFarFutureTime() async throws {
    let library = Library()
    let now = UInt64(Date().timeIntervalSince1970 * 1000)
    let day: UInt64 = 86_400_000
    let mallory = DeviceID(high: 0xBAD, low: 0xBAD)
    func record(_ path: String, _ content: VersionContent, _ modified: HLCTimestamp)
      -> VersionRecord
    {
      VersionRecord(
        path: DocumentPath(components: path.split(separator: "/").map { Array($0.utf8) }),
        content: content, parents: [], modified: modified, deviceID: mallory,
        deviceName: "mallory")
    }
    // The old clock trapped on the first local version after this one: counter + 1.
    let fullCounter = record(
      "overflow", .directory,
      HLCTimestamp(wallMilliseconds: HLCTimestamp.maximumWallMilliseconds + 1, counter: .max))
    let escape = record("../escape", .directory, HLCTimestamp(wallMilliseconds: now))
    let future = record("future", .directory, HLCTimestamp(wallMilliseconds: now + 30 * day))
    do {
      let store = try LocalStore(directory: library.folder + "/a")
      try store.applySync(
        [fullCounter, escape, future].map { .addVersion($0.stored) })
    }

    let a = try library.device("a")
    let b = try library.device("b")
    try a.write("new.txt", "made after the start\n")
    try await a.sync()
    try await b.sync()
    #expect(try b.read("new.txt") == "made after the start\n")
    let made = try #require(a.engine.versions(of: DocumentPath("new.txt"))?.current)
    #expect(made.modified.wallMilliseconds < now + day, "dragged to \(made.modified.isoString)")
    // What an earlier docsync accepted and can be used stays: the folder is shown.
    _ = try a.inode("future")
    #expect((try? a.inode("overflow")) == nil)
    await a.stop()
    await b.stop()
  }
}
