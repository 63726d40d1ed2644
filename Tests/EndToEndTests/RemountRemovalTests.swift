import Foundation
import MountHarness
import Testing

/// Folders made, the mount remounted, and all of them removed at once while the first turn
/// after the mount walks every path: none comes back, here or on another device.
@Suite("Removals right after a remount stay removed", .docsyncOnly)
struct RemountRemovalTests {
  static let count = 3_000

  /// The folders under `root` of `device`.
  func folders(_ device: Device, _ root: String) throws -> [String] {
    guard FileManager.default.fileExists(atPath: device.path(root)) else { return [] }
    return try FileManager.default.contentsOfDirectory(atPath: device.path(root))
  }

  @Test(
    "3,000 new folders, unmount, mount, rm -rf at once: nothing comes back",
    .needs("python3", "rm"))
  func foldersRemovedRightAfterARemountStayRemoved() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try FileManager.default.createDirectory(
        atPath: a.path("tree"), withIntermediateDirectories: true)
      try library.sync(a, b)
      // Made and unmounted at once: their creations go up at the next mount, while `rm` runs.
      let make = """
        import os, sys
        for i in range(int(sys.argv[2])):
            os.mkdir(os.path.join(sys.argv[1], "f%04d" % i))
        """
      try check(["python3", "-c", make, a.path("tree"), "\(Self.count)"])
      try a.unmount()
      try a.mount()
      // `check` fails on rm's "Directory not empty", had a folder come back during it.
      try check(["rm", "-rf", a.path("tree")])
      let backAtOnce = try folders(a, "tree")
      #expect(backAtOnce.isEmpty, "\(backAtOnce.count) came back: \(backAtOnce.prefix(5))")
      try library.sync(a, b, a)
      for device in [a, b] {
        let back = try folders(device, "tree")
        #expect(back.isEmpty, "\(device.name): \(back.count) came back: \(back.prefix(5))")
        #expect(
          !FileManager.default.fileExists(atPath: device.path("tree")),
          "\(device.name): \(library.logTails())")
        #expect(try findVersions(device).isEmpty, "\(device.name)")
      }
      try expectSameTree(a, b)
    }
  }
}
