import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A disk that fills up under a device's state folder: a save still lands in the working file,
/// but its copy for upload cannot be made. Root only for the small tmpfs that stands for the
/// full disk; the mounts are ordinary docsync mounts.
@Suite("A full disk under the state folder, as root", .docsyncOnly, .asRoot)
struct DiskFullAsRootTests {
  static let size = 1 << 20

  static func content(_ seed: UInt8) -> [UInt8] {
    (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed }
  }

  /// Rewrites the file in place (O_TRUNC), as nano or VS Code save.
  static func save(_ path: String, _ bytes: [UInt8]) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
  }

  /// Whether the file at `path` holds `bytes` (compared here, so that a failure does not
  /// print a mebibyte).
  static func holds(_ path: String, _ bytes: [UInt8]) -> Bool {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) == bytes } ?? false
  }

  /// What a test of the full disk gets: the binary, both mount points, the small disk, the
  /// session bus the daemons notify on, and `docsync events --json` of the device on it.
  struct Devices {
    let binary: String
    let a: String
    let b: String
    let disk: String
    let bus: SessionBusDaemon
    let events: BackgroundProcess
  }

  /// Two devices on one SQLite hub, `a` and `b`, with the state folder of `small` (`a` or
  /// `b`) on a 24 MiB tmpfs (root-only: the mount), both on a private session bus. Both
  /// devices hold `doc.bin` with `first` when `body` starts, and the tmpfs is full but for
  /// half the document's size: rewriting it in place needs no more, a copy of it all.
  static func withDevices(
    stateOnSmallDisk small: String, first: [UInt8], _ body: (Devices) throws -> Void
  ) throws {
    try #require(TestEnvironment.isRoot, "mounting a small tmpfs needs root")
    let bus = try SessionBusDaemon()
    let environment = ["DBUS_SESSION_BUS_ADDRESS": bus.address]
    try MountFixture.withScratch { m throws in
      let binary = try MountFixture.docsyncBinary()
      let disk = m.scratch("small")
      try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
      try check(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", disk])
      defer { _ = umount2(disk, Int32(MNT_DETACH)) }
      let hub = m.scratch("hub.sqlite")
      let mounts = ["a": m.mountPoint, "b": m.scratch("b")]
      try FileManager.default.createDirectory(
        atPath: mounts["b"]!, withIntermediateDirectories: true)
      var mounted: [String] = []
      defer {
        for mount in mounted { _ = try? run([binary, "unmount", mount]) }
      }
      for name in ["a", "b"] {
        let state = name == small ? disk + "/state" : m.scratch("\(name)-state")
        try MountFixture.makePrivateFolder(state)
        try check(
          [binary, "mount", mounts[name]!, "--state", state, "--hub", hub, "--device", name],
          env: environment)
        mounted.append(mounts[name]!)
      }
      try save(mounts["a"]! + "/doc.bin", first)
      try check([binary, "sync", mounts["a"]!])
      try check([binary, "sync", mounts["b"]!])
      #expect(holds(mounts["b"]! + "/doc.bin", first))
      try fill(disk, leaving: size / 2)
      let events = try BackgroundProcess([
        binary, "events", mounts[small]!, "--json", "--after", "0",
      ])
      try body(
        Devices(
          binary: binary, a: mounts["a"]!, b: mounts["b"]!, disk: disk, bus: bus, events: events))
    }
  }

  /// Fills the file system of `disk` but for `free` bytes, with the file `disk/filler`.
  static func fill(_ disk: String, leaving free: Int) throws {
    var info = statvfs()
    try #require(statvfs(disk, &info) == 0)
    let available = Int(info.f_bavail) * Int(info.f_frsize)
    let filler = open(disk + "/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    try #require(filler >= 0)
    #expect(posix_fallocate(filler, 0, off_t(available - free)) == 0)
    close(filler)
  }

  /// The save waits and `docsync sync` says why; the other device keeps the document (before,
  /// the save was recorded as a deletion and the other device deleted it); once space is
  /// freed the save reaches it.
  @Test(.needs("dbus-daemon", "dbus-monitor"))
  func aSaveThatCannotBeCopiedOnAFullDiskDeletesNothingElsewhere() throws {
    let first = Self.content(1)
    try Self.withDevices(stateOnSmallDisk: "a", first: first) { devices in
      let (binary, a, b, small) = (devices.binary, devices.a, devices.b, devices.disk)
      let (bus, events) = (devices.bus, devices.events)
      let second = Self.content(2)
      try Self.save(a + "/doc.bin", second)
      let refused = try run([binary, "sync", a, "--timeout", "20"], timeout: .seconds(60))
      #expect(refused.status == 1, "\(refused)")
      #expect(refused.stderr.contains("doc.bin"), "\(refused.stderr)")
      #expect(refused.stderr.contains("No space left on device"), "\(refused.stderr)")
      let status = try check([binary, "status", a]).stdout
      #expect(status.contains("cannot read to sync: 1"), "\(status)")
      #expect(status.contains("doc.bin (") && status.contains("No space left on device"))
      let json = try check([binary, "status", a, "--json"]).stdout
      #expect(json.contains("\"unreadable\""), "\(json)")
      try check([binary, "sync", b])
      #expect(Self.holds(b + "/doc.bin", first), "the other device lost the document")
      #expect(Self.holds(a + "/doc.bin", second))
      try bus.waitForCall(
        "Notify",
        containing: ["docsync cannot sync", "Cannot read doc.bin", "free some space", a])
      try events.waitForOutput("\"event\":\"failing\"", timeout: .seconds(5))

      #expect(unlink(small + "/filler") == 0)
      let synced = try run([binary, "sync", a], timeout: .seconds(60))
      let log = (try? String(contentsOfFile: small + "/state/docsync.log", encoding: .utf8)) ?? ""
      #expect(synced.status == 0, "\(synced)\n\(log.suffix(2000))")
      try check([binary, "sync", b])
      #expect(Self.holds(b + "/doc.bin", second))
      #expect(!(try check([binary, "status", a]).stdout.contains("cannot read to sync")))
      try events.waitForOutput("\"event\":\"recovered\"", timeout: .seconds(5))
      #expect(bus.calls("Notify").count == 1, "\(bus.messages)")
    }
  }

  /// A device whose disk is full cannot store what it pulls. It is not offline (the hub
  /// answers; before, it said "the hub is unreachable" and went on trying every 20 ms):
  /// `docsync sync` and `status` say it cannot sync and why, it keeps what it shows, and it
  /// catches up once space is freed.
  @Test(.needs("dbus-daemon", "dbus-monitor"))
  func aDeviceThatCannotStoreWhatItPullsSaysSoAndIsNotOffline() throws {
    let first = Self.content(3)
    try Self.withDevices(stateOnSmallDisk: "b", first: first) { devices in
      let (binary, a, b, small) = (devices.binary, devices.a, devices.b, devices.disk)
      let (bus, events) = (devices.bus, devices.events)
      let second = Self.content(4)
      try Self.save(a + "/doc.bin", second)
      try check([binary, "sync", a])
      let refused = try run([binary, "sync", b, "--timeout", "20"], timeout: .seconds(60))
      #expect(refused.status == 1, "\(refused)")
      #expect(refused.stderr.contains("cannot sync"), "\(refused.stderr)")
      #expect(refused.stderr.contains("No space left on device"), "\(refused.stderr)")
      #expect(!refused.stderr.contains("unreachable"), "\(refused.stderr)")
      let status = try check([binary, "status", b]).stdout
      #expect(status.contains("state:     cannot sync since"), "\(status)")
      #expect(status.contains("No space left on device") && !status.contains("offline"))
      let json = try check([binary, "status", b, "--json"]).stdout
      #expect(json.contains("\"cannot sync\"") && json.contains("\"cannotSyncReason\""), "\(json)")
      #expect(Self.holds(b + "/doc.bin", first))
      // The person is told once, with what to do; a stream says when it fails and recovers.
      try bus.waitForCall(
        "Notify",
        containing: ["docsync cannot sync b", "No space left on device", "free some space"])
      try events.waitForOutput("\"event\":\"failing\"", timeout: .seconds(5))

      #expect(unlink(small + "/filler") == 0)
      let synced = try run([binary, "sync", b], timeout: .seconds(60))
      #expect(synced.status == 0, "\(synced)")
      #expect(Self.holds(b + "/doc.bin", second))
      let after = try check([binary, "status", b]).stdout
      #expect(after.contains("state:     up to date"), "\(after)")
      try events.waitForOutput("\"event\":\"recovered\"", timeout: .seconds(5))
      #expect(!events.output.contains("\"offline\""), "\(events.output)")
      #expect(bus.calls("Notify").count == 1, "\(bus.messages)")
    }
  }
}
