import ContentModel
import DocumentFileSystem
import DocumentModel
import Foundation
import Glibc
import Hub
import SyncEngine
import Testing

/// Content this device wrote stays readable here when another device's change takes its path:
/// as a conflict version or an earlier version, with the hub unreachable, from the first read.
@Suite("content a remote change displaces stays readable offline")
struct DisplacedContentTests {
  /// Device `a`, whose hub can be switched off, and device `b`, on one SQLite hub.
  func devices(_ library: Library) throws -> (Device, SwitchableHub, Device) {
    let hub = SwitchableHub(try SQLiteHub(path: library.folder + "/hub.sqlite"))
    let a = try Device(
      folder: library.folder + "/a", hub: hub, hubDescription: "switchable", name: "a")
    return (a, hub, try library.device("b"))
  }

  func hash(_ text: String) -> [UInt8] { ContentHash(of: Array(text.utf8)).bytes }

  /// The hub's names of a small text: its blob's hash and its one chunk's id.
  func contentNames(_ text: String) -> [[UInt8]] {
    [hash(text), ObjectHasher().id(of: Array(text.utf8), kind: .chunk).bytes]
  }

  func names(_ device: Device, _ folder: String) throws -> [String] {
    let inode = try device.inode(folder)
    let handle = try device.fileSystem.openDirectory(inode: inode, caller: device.me)
    defer { device.fileSystem.releaseDirectory(handle: handle) }
    var names: [String] = []
    try device.fileSystem.readDirectory(inode: inode, handle: handle, offset: 0, plus: false) {
      names.append(String(decoding: $0.name, as: UTF8.self))
      return true
    }
    return names.filter { $0 != "." && $0 != ".." }
  }

  @Test func aFileAgainstAFolderReadsAsAConflictVersionWithTheHubUnreachable() async throws {
    let library = Library()
    let (a, hub, b) = try devices(library)
    b.engine.pause()
    try a.write("thing", "mine\n")
    try await a.sync()
    _ = try b.fileSystem.makeDirectory(
      parent: DocumentFileSystem.rootInode, name: Array("thing".utf8), mode: 0o755, caller: b.me)
    b.engine.resume()
    try await b.sync()
    // `a` learns of the folder, and never gets its own file's content from the hub again.
    hub.refuseContent(nil)
    try await a.sync()
    // The folder took the path on `a` too.
    #expect(try a.versions("thing").count == 1)
    let folder = try a.inode("thing")
    let handle = try a.fileSystem.openDirectory(inode: folder, caller: a.me)
    a.fileSystem.releaseDirectory(handle: handle)
    hub.setUnreachable(true)
    let versions = try a.versions("thing")
    #expect(versions.count == 1)
    #expect(try a.read(".versions/thing/" + versions[0]) == "mine\n")
    hub.setUnreachable(false)
    hub.refuseContent([])
    await a.stop()
    await b.stop()
  }

  @Test func anOwnEditAnotherDeviceEditedAfterReadsInHistoryWithTheHubUnreachable() async throws {
    let library = Library()
    let (a, hub, b) = try devices(library)
    try a.write("plan.md", "base\n")
    try await a.sync()
    try await b.sync()
    try a.write("plan.md", "mine\n")
    try await a.sync()
    try await b.sync()
    try b.write("plan.md", "theirs\n")
    try await b.sync()
    hub.refuseContent(Set(contentNames("mine\n") + contentNames("base\n")))
    try await a.sync()
    #expect(try a.read("plan.md") == "theirs\n")
    hub.setUnreachable(true)
    // The base `a` wrote over itself is the hub's alone; the edit another device's followed
    // is here.
    let earlier = try names(a, ".history/plan.md").filter { $0.contains("_a_") }
    let contents = earlier.compactMap { try? a.read(".history/plan.md/" + $0) }
    #expect(contents == ["mine\n"], "\(earlier)")
    hub.setUnreachable(false)
    await a.stop()
    await b.stop()
  }

  @Test func aFileInAFolderAnotherDeviceDeletedReadsInHistoryWithTheHubUnreachable()
    async throws
  {
    let library = Library()
    let (a, hub, b) = try devices(library)
    _ = try a.fileSystem.makeDirectory(
      parent: DocumentFileSystem.rootInode, name: Array("d".utf8), mode: 0o755, caller: a.me)
    try a.write("d/x.txt", "mine\n")
    try await a.sync()
    try await b.sync()
    let folder = try b.inode("d")
    try b.fileSystem.unlink(parent: folder, name: Array("x.txt".utf8), caller: b.me)
    try b.fileSystem.removeDirectory(
      parent: DocumentFileSystem.rootInode, name: Array("d".utf8), caller: b.me)
    try await b.sync()
    hub.refuseContent(nil)
    try await a.sync()
    #expect((try? a.inode("d")) == nil)
    hub.setUnreachable(true)
    let earlier = try names(a, ".history/d/x.txt")
    #expect(try earlier.map { try a.read(".history/d/x.txt/" + $0) } == ["mine\n"])
    hub.setUnreachable(false)
    await a.stop()
    await b.stop()
  }
}
