import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A state database that a disk damaged: the device never syncs what it no longer reads
/// right, and gets its folder back from the hub with everything it had not synced.
@Suite("A damaged state database")
struct DamagedStateTests {
  @Test(
    "A's damaged state is set aside and rebuilt from the hub; its unsynced saves reach B",
    .needs("sqlite3"), .docsyncOnly, .enabled(if: TestPostgres.isEnabled))
  func aDamagedStateIsRebuiltAndLosesNothing() throws {
    // A hub of the test's own, which it stops to take the hub away.
    let cluster = try PrivatePostgresCluster()
    try Library.with(hub: try cluster.newLibraryHub()) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      for name in ["kept", "edited", "removed"] {
        try write(a.path("\(name).txt"), "\(name) as synced\n")
      }
      try library.sync(a, b)

      // Saves that A records but does not send: they live only in A's state.
      try a.pause()
      try write(a.path("edited.txt"), "edited while paused\n")
      try write(a.path("new.txt"), "made while paused\n")
      try FileManager.default.removeItem(atPath: a.path("removed.txt"))
      let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
      try Data(large).write(to: URL(fileURLWithPath: a.path("large.bin")))
      var pending = 0
      for _ in 0..<300 where pending < 4 {
        usleep(100_000)
        pending = try a.status().pendingUploads
      }
      try #require(pending == 4, "A recorded \(pending) of its 4 saves within 30 s")
      try a.unmount()
      try damageRootPage(of: "entries", in: "\(a.state)/state.sqlite")

      // The hub is away: the mount refuses, says why, and keeps what was not synced.
      try cluster.stop()
      let refused = try run(
        a.asOwner([
          try MountFixture.docsyncBinary(), "mount", a.mountPoint, "--state", a.state,
          "--hub", library.hub, "--device", a.name,
        ]), env: a.environment, timeout: .seconds(60))
      #expect(refused.status == 1, "\(refused)")
      #expect(refused.stderr.contains("is damaged"), "\(refused.stderr)")
      #expect(refused.stderr.contains("nothing is lost"), "\(refused.stderr)")
      #expect(!MountFixture.mountedPoints().contains(a.mountPoint))
      try cluster.start()

      let mounted = try a.mount()
      #expect(
        mounted.stderr.contains("4 version(s) that had not reached the hub were recovered"),
        "\(mounted.stderr)")
      try library.sync(a, b)
      for device in [a, b] {
        #expect(try read(device.path("kept.txt")) == "kept as synced\n", "\(device.name)")
        #expect(try read(device.path("edited.txt")) == "edited while paused\n", "\(device.name)")
        #expect(try read(device.path("new.txt")) == "made while paused\n", "\(device.name)")
        #expect(!FileManager.default.fileExists(atPath: device.path("removed.txt")))
        #expect(
          try Data(contentsOf: URL(fileURLWithPath: device.path("large.bin"))) == Data(large),
          "\(device.name)")
        #expect(try findVersions(device).isEmpty, "\(device.name)")
      }
      try expectSameTree(a, b)

      // Set aside whole, marked as recovered: the next mount neither rebuilds nor recovers.
      let aside = try FileManager.default.contentsOfDirectory(atPath: a.state)
        .filter { $0.hasPrefix("damaged-") }
      #expect(aside.count == 1, "\(aside)")
      for file in ["state.sqlite", "files", "recovered"] {
        #expect(FileManager.default.fileExists(atPath: "\(a.state)/\(aside.first ?? "")/\(file)"))
      }
      try a.unmount()
      let again = try a.mount()
      #expect(!again.stderr.contains("damaged") && !again.stderr.contains("recovered"))
      #expect(try read(a.path("edited.txt")) == "edited while paused\n")
    }
  }
}
