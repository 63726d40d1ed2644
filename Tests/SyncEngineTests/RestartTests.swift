import DocumentFileSystem
import DocumentModel
import Foundation
import Glibc
import Hub
import LocalStore
import SyncEngine
import Testing

/// What a start makes of a state that a crash or a power cut left behind: a remote change that
/// landed without its record, an intent, a working file that went back to older content. None
/// of them is a local edit, so none may publish a version.
@Suite("restart after a crash or a power cut, in process")
struct RestartTests {
  /// How a test damages B's state while B is stopped.
  enum Damage: CaseIterable {
    /// The change landed, its record did not (a crash between the two), no intent either.
    case recordLost
    /// The same, with the intent that the engine writes before the change lands.
    case recordLostWithIntent
    /// The working file holds the previous version's content and time again.
    case fileWentBack
  }

  @Test(arguments: Damage.allCases)
  func aRestartPublishesNothing(_ damage: Damage) async throws {
    let library = Library()
    let a = try library.device("a")
    var b: Device? = try library.device("b")
    try a.write("doc.txt", "version 1\n")
    try await a.sync()
    try await b!.sync()
    try a.write("doc.txt", "version 2\n")
    try await a.sync()
    try await b!.sync()
    #expect(try b!.read("doc.txt") == "version 2\n")
    let inode = try b!.inode("doc.txt")
    let records = try await hubRecordCount(library)
    await b!.stop()
    b = nil

    let store = try LocalStore(directory: library.folder + "/b")
    var rows: [ShownRecord] = []
    try store.loadShown { rows.append($0) }
    let shown = try #require(rows.first { $0.path == Array("doc.txt".utf8) })
    let payload = try #require(try store.storedPayload(shown.versionID))
    let current = try VersionRecord(
      decoding: payload, expectedID: VersionID(try #require(Digest256(bytes: shown.versionID))))
    let previousID = try #require(current.parents.first)
    let previous = try VersionRecord(
      decoding: try #require(try store.storedPayload(previousID.bytes)),
      expectedID: previousID)
    switch damage {
    case .recordLost, .recordLostWithIntent:
      // What the path showed before the change, with times the file no longer has.
      var changes: [SyncChange] = [
        .show(
          ShownRecord(
            path: shown.path, versionID: previousID.bytes, size: 10, modificationTime: 1,
            changeTime: 1))
      ]
      if damage == .recordLostWithIntent {
        changes.append(
          .beginApply(
            ApplyIntent(
              path: shown.path, versionID: current.id.bytes,
              contentHash: try #require(current.content.blobHash).bytes)))
      }
      try store.applySync(changes)
    case .fileWentBack:
      // B holds version 2 in its working file alone (content held once): what the power cut
      // took back comes from the hub again.
      let hash = try #require(current.content.blobHash)
      #expect(access(store.blobPath(hex: hash.hex), F_OK) != 0)
      let fd = openat(
        store.workingFiles, LocalStore.workingFileName(inode), O_WRONLY | O_TRUNC | O_CLOEXEC)
      #expect(fd >= 0)
      let bytes = Array("version 1\n".utf8)
      #expect(Glibc.write(fd, bytes, bytes.count) == bytes.count)
      let time = try #require(previous.contentTime)
      let spec = timespec(
        tv_sec: Int(time / 1_000_000_000), tv_nsec: Int(time % 1_000_000_000))
      #expect(futimens(fd, [spec, spec]) == 0)
      close(fd)
    }
    store.shutdown()

    let restarted = try library.device("b")
    try await restarted.sync()
    try await a.sync()
    #expect(try restarted.read("doc.txt") == "version 2\n")
    #expect(try a.read("doc.txt") == "version 2\n")
    #expect(try await hubRecordCount(library) == records, "a version was published")
    #expect((try? restarted.versions("doc.txt")) ?? [] == [])
    await restarted.stop()
    #expect(try LocalStore(directory: library.folder + "/b").loadSync().intents.isEmpty)
    await a.stop()
  }

  /// A remote change that needs no content copy (a new folder, a symlink, a removal) lands
  /// in the tree, and the tree's commit queue commits it, a moment before the engine records
  /// what the path shows: a crash in between leaves the path as the current version has it
  /// with no record of it (or with the record of what it showed before).
  enum Unrecorded: CaseIterable {
    case folder
    case symlink
    case removal
    /// The same for a file, though a file's landing is covered by its intent.
    case file
  }

  @Test(arguments: Unrecorded.allCases)
  func aChangeThatLandedWithoutItsRecordIsNotALocalEdit(_ unrecorded: Unrecorded) async throws {
    let library = Library()
    let a = try library.device("a")
    var b: Device? = try library.device("b")
    _ = try a.fileSystem.makeDirectory(
      parent: DocumentFileSystem.rootInode, name: Array("notes".utf8), mode: 0o755, caller: a.me)
    try a.write("notes/doc.txt", "kept\n")
    try a.write("gone.txt", "soon gone\n")
    _ = try a.fileSystem.symlink(
      target: Array("notes/doc.txt".utf8), parent: DocumentFileSystem.rootInode,
      name: Array("link".utf8), caller: a.me)
    try await a.sync()
    try await b!.sync()
    try a.fileSystem.unlink(
      parent: DocumentFileSystem.rootInode, name: Array("gone.txt".utf8), caller: a.me)
    try await a.sync()
    try await b!.sync()
    #expect(try b!.read("notes/doc.txt") == "kept\n")
    #expect((try? b!.inode("gone.txt")) == nil)
    let records = try await hubRecordCount(library)
    await b!.stop()
    b = nil

    let store = try LocalStore(directory: library.folder + "/b")
    var rows: [ShownRecord] = []
    try store.loadShown { rows.append($0) }
    func row(_ path: String) throws -> ShownRecord {
      try #require(rows.first { $0.path == Array(path.utf8) }, "no shown row for \(path)")
    }
    switch unrecorded {
    case .folder:
      try store.applySync([.unshow(path: Array("notes".utf8))])
    case .symlink:
      try store.applySync([.unshow(path: Array("link".utf8))])
    case .file:
      try store.applySync([.unshow(path: Array("notes/doc.txt".utf8))])
    case .removal:
      // What the path showed before the removal landed: the file's version.
      let shown = try row("gone.txt")
      let deletion = try VersionRecord(
        decoding: try #require(try store.storedPayload(shown.versionID)),
        expectedID: VersionID(try #require(Digest256(bytes: shown.versionID))))
      #expect(deletion.content.isDeletion)
      let file = try #require(deletion.parents.first)
      try store.applySync([
        .show(
          ShownRecord(
            path: shown.path, versionID: file.bytes, size: 10, modificationTime: 1, changeTime: 1))
      ])
    }
    store.shutdown()

    let restarted = try library.device("b")
    try await restarted.sync()
    try await a.sync()
    #expect(try await hubRecordCount(library) == records, "a version was published")
    #expect(try restarted.read("notes/doc.txt") == "kept\n")
    #expect((try? restarted.inode("gone.txt")) == nil)
    #expect((try? restarted.versions("notes/doc.txt")) ?? [] == [])
    await restarted.stop()
    // The path's record is back: a second start has nothing to settle either.
    var after: [ShownRecord] = []
    try LocalStore(directory: library.folder + "/b").loadShown { after.append($0) }
    #expect(
      after.sorted { $0.path.lexicographicallyPrecedes($1.path) }.map(\.path)
        == rows.sorted {
          $0.path.lexicographicallyPrecedes($1.path)
        }.map(\.path))
    await a.stop()
  }

  private func hubRecordCount(_ library: Library) async throws -> Int {
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    return try await hub.records(after: HubCursor(serialized: ""), limit: 10_000).records.count
  }
}
