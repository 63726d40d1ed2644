import DocumentFileSystem
import DocumentModel
import Testing

/// What `.versions` announces when a conflict ends: nothing that a person removed there
/// through the mount (the kernel raised it, and their `rm -r` may still be removing the rest),
/// and the vanished folder when the conflict ended on another device.
@Suite struct VersionsAnnouncementTests {
  let path = DocumentPath(components: [Array("plan.md".utf8)])

  /// Two devices that list one conflict version of plan.md, and its name.
  func conflict(_ library: Library) async throws -> (Device, Device, String) {
    let a = try library.device("a")
    let b = try library.device("b")
    try a.write("plan.md", "base\n")
    try await a.sync()
    try await b.sync()
    b.engine.pause()
    try a.write("plan.md", "from a\n")
    try await a.sync()
    try await Task.sleep(for: .milliseconds(20))
    try b.write("plan.md", "from b\n")
    b.engine.resume()
    try await b.sync()
    try await a.sync()
    let versions = try a.versions("plan.md")
    try #require(versions.count == 1 && versions == (try b.versions("plan.md")))
    return (a, b, versions[0])
  }

  /// A's announcements start now, with the conflict as watchers have heard of it.
  func announcing(_ device: Device) -> AnnouncementQueue {
    device.fileSystem.announcements.begin(process: 4242)
    device.fileSystem.rememberConflicts()
    return device.fileSystem.announcements
  }

  @Test func whatAPersonRemovesInVersionsIsNotRemovedAgain() async throws {
    let (a, b, name) = try await conflict(Library())
    let queue = announcing(a)
    let folder = try a.inode(".versions/plan.md")
    try a.fileSystem.unlink(parent: folder, name: Array(name.utf8), caller: a.me)
    #expect(a.engine.conflicts().isEmpty)
    let batch = try #require(queue.next())
    #expect(batch.conflicts == [path] && batch.local == [path])
    // The version and (with the last version gone) its folder vanished: neither is announced.
    let announced = a.fileSystem.versionsAnnouncements(at: batch.conflicts, local: batch.local)
    #expect(announced.isEmpty, "\(announced)")
    queue.close()
    await a.stop()
    await b.stop()
  }

  @Test func aConflictThatEndsOnAnotherDeviceIsAnnounced() async throws {
    let (a, b, name) = try await conflict(Library())
    let queue = announcing(a)
    let onB = try b.inode(".versions/plan.md")
    try b.fileSystem.unlink(parent: onB, name: Array(name.utf8), caller: b.me)
    try await b.sync()
    try await a.sync()
    #expect(a.engine.conflicts().isEmpty)
    let batch = try #require(queue.next())
    #expect(batch.conflicts.contains(path) && batch.local.isEmpty)
    let announced = a.fileSystem.versionsAnnouncements(at: batch.conflicts, local: batch.local)
    #expect(announced.count == 1, "\(announced)")
    #expect(announced.first?.kind == .removed(.directory))
    #expect(announced.first?.name == Array("plan.md".utf8))
    #expect(announced.first?.parent == DocumentFileSystem.versionsInode)
    queue.close()
    await a.stop()
    await b.stop()
  }
}
