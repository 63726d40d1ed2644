import DocumentFileSystem
import DocumentModel
import Foundation
import Hub
import LocalStore
import SyncEngine
import Testing

/// Each mount prunes by itself once a day, and what it released stays released after a
/// restart, with the heads it had.
@Suite("retention in process")
struct RetentionInProcessTests {
  @Test func aMountPrunesByItselfWhenTheLastPruneIsADayOld() async throws {
    let library = Library()
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    try await hub.setRetention(RetentionPolicy.keep(milliseconds: 0).serialized)
    var a = try library.device("a")
    for save in 1...3 {
      try a.write("plan.md", "save \(save)\n")
      try await a.sync()
    }
    #expect(try historyNames(a, "plan.md").count == 2)
    await a.stop()
    // The day has passed: the next start prunes in its first turn of the loop.
    try LocalStore(directory: library.folder + "/a").applySync([
      .setMetadata(key: "last_prune", value: Array("0".utf8))
    ])
    a = try library.device("a")
    try await a.sync()
    let deadline = ContinuousClock.now + .seconds(20)
    while (try? historyNames(a, "plan.md")) != nil && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect((try? historyNames(a, "plan.md")) == nil, "the folder is gone once nothing is left")
    await a.stop()
    a = try library.device("a")
    try await a.sync()
    #expect((try? historyNames(a, "plan.md")) == nil, "released stays released")
    #expect(try a.read("plan.md") == "save 3\n")
    #expect(a.engine.conflicts().isEmpty)
    await a.stop()
  }

  func historyNames(_ device: Device, _ path: String) throws -> [String] {
    let folder = try device.inode(".history/" + path)
    let handle = try device.fileSystem.openDirectory(inode: folder, caller: .current)
    defer { device.fileSystem.releaseDirectory(handle: handle) }
    var names: [String] = []
    try device.fileSystem.readDirectory(inode: folder, handle: handle, offset: 0, plus: false) {
      names.append(String(decoding: $0.name, as: UTF8.self))
      return true
    }
    return names.filter { $0 != "." && $0 != ".." }
  }
}
