import Foundation
import MountHarness
import Testing

/// `user.docsync.state`: where a document's content is, and whether the hub still lacks a
/// change of it, for scripts that wait until a file is safe elsewhere.
@Suite("The state attribute of a document", .docsyncOnly)
struct StateAttributeTests {
  func state(_ device: Device, _ name: String) throws -> String {
    String(decoding: try getUserXattr(device.path(name), "user.docsync.state"), as: UTF8.self)
  }

  @Test(
    "Says upload until the hub has the change, is read-only and is not listed",
    .needs("getfattr", "setfattr"))
  func saysUploadUntilTheHubHasTheChange() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      try write(a.path("notes.txt"), "first\n")
      try a.sync()
      #expect(try state(a, "notes.txt") == "local")
      // Paused: the change stays on this device, recorded into the outbox.
      try a.pause()
      try write(a.path("notes.txt"), "second\n")
      #expect(try state(a, "notes.txt") == "local upload")
      usleep(1_500_000)
      #expect(try state(a, "notes.txt") == "local upload", "still in the outbox")
      #expect(try a.status().pendingUploads > 0)
      try a.resume()
      try a.sync()
      #expect(try state(a, "notes.txt") == "local")
      // Kept by docsync: writing it is refused, and a listing leaves it out, so that cp -a
      // and rsync -X from the mount do not carry it.
      let set = try run(
        ["setfattr", "-n", "user.docsync.state", "-v", "online", "notes.txt"], cwd: a.mountPoint)
      #expect(set.status != 0)
      #expect(try state(a, "notes.txt") == "local")
      let listed = try run(["getfattr", "-d", "-m", "-", "notes.txt"], cwd: a.mountPoint)
      #expect(listed.status == 0 && !listed.stdout.contains("docsync.state"), "\(listed)")
      // A folder has none.
      try FileManager.default.createDirectory(
        atPath: a.path("folder"), withIntermediateDirectories: false)
      let folder = try run(
        ["getfattr", "-n", "user.docsync.state", "folder"], cwd: a.mountPoint)
      #expect(folder.status != 0)
    }
  }
}
