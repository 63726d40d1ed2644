import DocumentModel
import Foundation
import Glibc
import Hub
import LocalStore
import SyncEngine
import Testing

import func MountHarness.check
import func MountHarness.damageRootPage

/// What the recovery of a damaged state takes from it: only records that hash to their id,
/// with content that hashes to its name, from a blob or from a working file of its size.
@Suite("recovery of a damaged state, in process")
struct DamagedStateRecoveryTests {
  @Test func onlyIntactRecordsWithIntactContentReachTheHub() async throws {
    let library = Library()
    let a = try library.device("a")
    try a.write("kept.txt", "kept as synced\n")
    try await a.sync()
    a.engine.pause()
    try a.write("unreadable.txt", "its record is damaged\n")
    try a.write("from-working-file.txt", "its blob is gone\n")
    try a.write("nowhere.txt", "its blob and working file are gone\n")
    try await Task.sleep(for: .milliseconds(300))  // recorded after the quiet moment
    let nowhere = try a.inode("nowhere.txt")
    await a.stop()

    let state = library.folder + "/a"
    func blob(_ text: String) -> String {
      let hex = ContentHash(of: Array(text.utf8)).hex
      return "\(state)/blobs/\(hex.prefix(2))/\(hex)"
    }
    for text in ["its blob is gone\n", "its blob and working file are gone\n"] {
      try FileManager.default.removeItem(atPath: blob(text))
    }
    _ = unlink(state + "/files/" + LocalStore.workingFileName(nowhere))
    // One byte of one unsynced record's encoding changes.
    try check([
      "/usr/bin/sqlite3", state + "/state.sqlite",
      """
      UPDATE versions SET payload = substr(payload, 1, 40) || X'7E' || substr(payload, 42)
      WHERE CAST(path AS TEXT) = 'unreadable.txt' AND id IN (SELECT id FROM outbox)
      """,
    ])
    try damageRootPage(of: "entries", in: state + "/state.sqlite")

    let aside = try LocalStore.setAside(directory: state)
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    let blobPath = { (hex: String) in "\(state)/blobs/\(hex.prefix(2))/\(hex)" }
    let report = try await DamagedStateRecovery.recover(aside, blobPath: blobPath, hub: hub)
    var expected = DamagedStateRecovery.Report()
    expected.recovered = 1
    expected.unreadable = 1
    expected.withoutContent = ["nowhere.txt"]
    #expect(report == expected)
    #expect(aside.isRecovered)
    // Again, as after a crash before the mark: the hub ignores what it has.
    #expect(try await DamagedStateRecovery.recover(aside, blobPath: blobPath, hub: hub) == expected)

    let b = try library.device("b")
    try await b.sync()
    #expect(try b.read("kept.txt") == "kept as synced\n")
    #expect(try b.read("from-working-file.txt") == "its blob is gone\n")
    #expect((try? b.read("unreadable.txt")) == nil)
    #expect((try? b.read("nowhere.txt")) == nil)
    await b.stop()
  }
}
