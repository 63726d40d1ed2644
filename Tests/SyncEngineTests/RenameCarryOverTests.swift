import DocumentFileSystem
import DocumentModel
import Foundation
import Glibc
import Hub
import SyncEngine
import Testing

/// A file that renames only moved keeps its content hash without being read again (issue 45:
/// an unmount after 10,000 renames hashed 10,000 clean files); a renamed file that was also
/// written, before or after its rename, is hashed, and every device ends with the right bytes.
@Suite("renamed files carry their content over")
struct RenameCarryOverTests {
  static let count = 300

  func rename(_ device: Device, _ from: String, _ to: String) throws {
    let source = from.split(separator: "/").map(String.init)
    let target = to.split(separator: "/").map(String.init)
    try device.fileSystem.rename(
      parent: try device.inode(source.dropLast().joined(separator: "/")),
      name: Array(source.last!.utf8),
      newParent: try device.inode(target.dropLast().joined(separator: "/")),
      newName: Array(target.last!.utf8), options: [], caller: device.me)
  }

  func makeFolder(_ device: Device, _ name: String) throws {
    _ = try device.fileSystem.makeDirectory(
      parent: DocumentFileSystem.rootInode, name: Array(name.utf8), mode: 0o755, caller: device.me)
  }

  /// Whether device `a`'s blob store (in `folder`) holds the content `text`.
  func holdsBlob(_ folder: String, _ text: String) -> Bool {
    let hex = ContentHash(of: Array(text.utf8)).hex
    return access(folder + "/blobs/" + hex.prefix(2) + "/" + hex, F_OK) == 0
  }

  func waitUntil(_ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while !condition() {
      if ContinuousClock.now > deadline { return }
      try await Task.sleep(for: .milliseconds(20))
    }
  }

  @Test func renamesOfCleanFilesReadNothingAndWrittenOnesAreHashed() async throws {
    let library = Library()
    let folder = library.folder + "/a"
    let hub = SwitchableHub(try SQLiteHub(path: library.folder + "/hub.sqlite"))
    let a = try Device(folder: folder, hub: hub, hubDescription: "switchable", name: "a")
    try makeFolder(a, "files")
    try makeFolder(a, "tree")
    for index in 0..<Self.count {
      try a.write("files/old\(index).txt", "file \(index)\n")
    }
    for index in 0..<20 {
      try a.write("tree/t\(index).txt", "tree \(index)\n")
    }
    for name in ["chain", "over", "target", "before", "after", "swap1", "swap2"] {
      try a.write("files/\(name).txt", "\(name) original\n")
    }
    try await a.sync()
    // Pushed, the blobs go: each clean working file holds its content (an unlink of its own).
    try await waitUntil { !holdsBlob(folder, "file 0\n") && !holdsBlob(folder, "tree 19\n") }
    #expect(!holdsBlob(folder, "file 0\n"))

    // Offline, so nothing is pushed and released again before the blob store is looked at.
    hub.setUnreachable(true)
    for index in 0..<Self.count {
      try rename(a, "files/old\(index).txt", "files/new\(index).txt")
    }
    // A folder's rename moves its files without changing their ctime.
    try rename(a, "tree", "moved")
    // Renames in a row, and a rename over another document.
    try rename(a, "files/chain.txt", "files/chain2.txt")
    try rename(a, "files/chain2.txt", "files/chain3.txt")
    try rename(a, "files/over.txt", "files/target.txt")
    // Written after its rename, with the size and mtime it had: only the ctime tells.
    let shown = try a.fileSystem.attributes(inode: try a.inode("files/after.txt")).st_mtim
    try rename(a, "files/after.txt", "files/after2.txt")
    try a.write("files/after2.txt", "AFTER original\n")
    _ = try a.fileSystem.setAttributes(
      inode: try a.inode("files/after2.txt"),
      update: AttributeUpdate(
        modificationTime: .nanoseconds(Int64(shown.tv_sec) * 1_000_000_000 + Int64(shown.tv_nsec))),
      caller: a.me)
    // Written before its rename, in the same window.
    try a.write("files/before.txt", "BEFORE original\n")
    try rename(a, "files/before.txt", "files/before2.txt")
    // Two files that trade places through a third name.
    try rename(a, "files/swap1.txt", "files/swap-tmp.txt")
    try rename(a, "files/swap2.txt", "files/swap1.txt")
    try rename(a, "files/swap-tmp.txt", "files/swap2.txt")
    // The unmount's shape: the window is recorded as the engine stops.
    await a.stop()

    // Moved files were not read into blobs again; written ones were hashed.
    #expect((0..<Self.count).allSatisfy { !holdsBlob(folder, "file \($0)\n") })
    #expect((0..<20).allSatisfy { !holdsBlob(folder, "tree \($0)\n") })
    #expect(!holdsBlob(folder, "chain original\n"))
    #expect(!holdsBlob(folder, "over original\n"))
    #expect(holdsBlob(folder, "AFTER original\n"))
    #expect(holdsBlob(folder, "BEFORE original\n"))

    hub.setUnreachable(false)
    let again = try Device(folder: folder, hub: hub, hubDescription: "switchable", name: "a")
    try await again.sync()
    let b = try library.device("b")
    try await b.sync()
    for device in [again, b] {
      #expect(try device.read("files/new0.txt") == "file 0\n")
      #expect(try device.read("files/new\(Self.count - 1).txt") == "file \(Self.count - 1)\n")
      #expect((try? device.inode("files/old0.txt")) == nil)
      #expect(try device.read("moved/t7.txt") == "tree 7\n")
      #expect((try? device.inode("tree")) == nil)
      #expect(try device.read("files/chain3.txt") == "chain original\n")
      #expect(try device.read("files/target.txt") == "over original\n")
      #expect(try device.read("files/after2.txt") == "AFTER original\n")
      #expect(try device.read("files/before2.txt") == "BEFORE original\n")
      #expect(try device.read("files/swap1.txt") == "swap2 original\n")
      #expect(try device.read("files/swap2.txt") == "swap1 original\n")
      #expect(device.engine.conflicts().isEmpty)
    }
    for index in stride(from: 0, to: Self.count, by: 37) {
      #expect(try b.read("files/new\(index).txt") == "file \(index)\n")
    }
    await again.stop()
    await b.stop()
  }
}
