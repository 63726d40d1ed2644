import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Devices whose wall clocks are hours off (issue 14): emulated with libfaketime in that
/// device's docsync processes only, the monotonic clocks left alone, as a laptop with a bad
/// clock would have them.
@Suite("Clocks hours off")
struct ClockSkewTests {
  static let faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

  /// A device of `library` whose docsync processes (the daemon, and the commands run for it)
  /// see a wall clock `offset` off.
  final class SkewedDevice {
    let name: String
    let mountPoint: String
    let state: String
    let environment: [String: String]
    private var isMounted = false

    init(_ library: Library, name: String, offset: String) throws {
      self.name = name
      mountPoint = "\(library.base)/\(name)/mnt"
      state = "\(library.base)/\(name)/state"
      environment = [
        "LD_PRELOAD": ClockSkewTests.faketime, "FAKETIME": offset,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
      ]
      for folder in [mountPoint, state] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      }
      let result = try run(
        [
          try MountFixture.docsyncBinary(), "mount", mountPoint, "--state", state, "--hub",
          library.hub, "--device", name,
        ], env: environment, timeout: .seconds(60))
      guard result.status == 0, MountFixture.mountedPoints().contains(mountPoint) else {
        throw TestFailure("docsync mount (\(name), clock \(offset)) failed: \(result)")
      }
      isMounted = true
    }

    func path(_ relative: String) -> String { "\(mountPoint)/\(relative)" }

    /// `docsync sync --timeout seconds` and how long it took, on the test's monotonic clock.
    func sync(timeout seconds: Int) throws -> (result: RunResult, seconds: Double) {
      let started = ContinuousClock.now
      let result = try run(
        [try MountFixture.docsyncBinary(), "sync", mountPoint, "--timeout", "\(seconds)"],
        env: environment, timeout: .seconds(seconds + 30))
      let elapsed = started.duration(to: .now)
      return (
        result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
      )
    }

    /// `docsync sync` that must succeed well within its timeout.
    func sync() throws {
      let (result, seconds) = try sync(timeout: 30)
      guard result.status == 0 else {
        throw TestFailure("docsync sync (\(name)) failed: \(result)\n\(logTail())")
      }
      print("docsync sync on \(name) took \(String(format: "%.2f", seconds)) s")
    }

    func status() throws -> DeviceStatus {
      let result = try check(
        [try MountFixture.docsyncBinary(), "status", mountPoint, "--json"], env: environment,
        timeout: .seconds(30))
      return try JSONDecoder().decode(DeviceStatus.self, from: Data(result.stdout.utf8))
    }

    func logTail() -> String {
      let log = (try? String(contentsOfFile: "\(state)/docsync.log", encoding: .utf8)) ?? ""
      return "docsync.log of \(name) (tail):\n"
        + log.split(separator: "\n").suffix(30).joined(separator: "\n")
    }

    func tearDown() {
      guard isMounted else { return }
      isMounted = false
      let result = try? run(
        [try MountFixture.docsyncBinary(), "unmount", mountPoint], env: environment,
        timeout: .seconds(60))
      if result?.status != 0 || MountFixture.mountedPoints().contains(mountPoint) {
        MountFixture.forceUnmount(mountPoint)
        Issue.record("docsync unmount (\(name)) failed: \(String(describing: result))")
      }
    }
  }

  /// Milliseconds since the epoch of an ISO 8601 time from `docsync status --json`.
  static func milliseconds(_ iso: String?) -> Double? {
    guard let iso, let date = ISO8601DateFormatter().date(from: iso) else { return nil }
    return date.timeIntervalSince1970 * 1000
  }

  @Test(
    "Clocks 2 h behind and 2 h ahead: sync completes, causality picks the later edit",
    .needs("sqlite3"), .docsyncOnly,
    .enabled("needs libfaketime") {
      TestEnvironment.isCI || access(ClockSkewTests.faketime, R_OK) == 0
    })
  func devicesWithClocksHoursOffSync() throws {
    guard access(Self.faketime, R_OK) == 0 else {
      throw TestFailure("\(Self.faketime) is missing: apt-get install libfaketime")
    }
    try Library.with(programs: ["sqlite3"], hub: .sqlite) { library in
      let desk = try library.device("desk")
      let laptop = try SkewedDevice(library, name: "laptop", offset: "-2h")
      defer { laptop.tearDown() }
      let tablet = try SkewedDevice(library, name: "tablet", offset: "+2h")
      defer { tablet.tearDown() }

      try write(desk.path("doc.md"), "1 desk\n")
      try desk.sync()
      try laptop.sync()
      try tablet.sync()
      #expect(try read(laptop.path("doc.md")) == "1 desk\n")
      #expect(try read(tablet.path("doc.md")) == "1 desk\n")
      // The daemons do run with their clocks off: their last sync is 2 h from the test's clock.
      let now = Date().timeIntervalSince1970 * 1000
      let hour = 3_600_000.0
      for (device, offset) in [(laptop, -2 * hour), (tablet, 2 * hour)] {
        let lastSync = try #require(Self.milliseconds(try device.status().lastSync))
        #expect(abs(lastSync - (now + offset)) < 0.25 * hour, "\(device.name)'s clock")
      }

      // Each edit follows the one before it; each device's wall clock says otherwise, by up to
      // four hours, and loses: the later edit by causality is current everywhere.
      try write(laptop.path("doc.md"), "2 laptop, 2 h behind the desk\n")
      try laptop.sync()
      try tablet.sync()
      #expect(try read(tablet.path("doc.md")) == "2 laptop, 2 h behind the desk\n")
      try write(tablet.path("doc.md"), "3 tablet\n")
      try tablet.sync()
      try laptop.sync()
      #expect(try read(laptop.path("doc.md")) == "3 tablet\n")
      try write(laptop.path("doc.md"), "4 laptop, 4 h behind the tablet\n")
      try laptop.sync()
      try tablet.sync()
      try desk.sync()
      // The desk, 2 h behind the tablet, edits a file the tablet made.
      try write(tablet.path("notes.txt"), "tablet's first notes\n")
      try tablet.sync()
      try desk.sync()
      try write(desk.path("notes.txt"), "desk's later notes\n")
      try desk.sync()
      try laptop.sync()
      try tablet.sync()
      for (name, root) in [
        ("desk", desk.mountPoint), ("laptop", laptop.mountPoint), ("tablet", tablet.mountPoint),
      ] {
        #expect(try read("\(root)/doc.md") == "4 laptop, 4 h behind the tablet\n", "\(name)")
        #expect(try read("\(root)/notes.txt") == "desk's later notes\n", "\(name)")
        let versions = try check(["find", ".versions", "-type", "f"], cwd: root).stdout
        #expect(versions.isEmpty, "\(name) has conflict versions: \(versions)")
      }
      #expect(try desk.status().conflicts.isEmpty)
    }
  }

  @Test(
    "Clocks 2 h behind and 2 h ahead: --timeout holds to within a second with the hub unreachable",
    .needs("sqlite3"), .docsyncOnly,
    .enabled("needs libfaketime") {
      TestEnvironment.isCI || access(ClockSkewTests.faketime, R_OK) == 0
    })
  func timeoutHoldsOnDevicesWithClocksHoursOff() throws {
    guard access(Self.faketime, R_OK) == 0 else {
      throw TestFailure("\(Self.faketime) is missing: apt-get install libfaketime")
    }
    try Library.with(programs: ["sqlite3"], hub: .sqlite) { library in
      let desk = try library.device("desk")
      let laptop = try SkewedDevice(library, name: "laptop", offset: "-2h")
      defer { laptop.tearDown() }
      let tablet = try SkewedDevice(library, name: "tablet", offset: "+2h")
      defer { tablet.tearDown() }
      try write(desk.path("doc.md"), "before the hub went away\n")
      try desk.sync()
      try laptop.sync()
      try tablet.sync()

      // Every read of the hub now fails, as an unreachable hub's would; renamed back below.
      try check([
        "sqlite3", "-cmd", ".timeout 10000", library.hub,
        "ALTER TABLE records RENAME TO records_away;",
      ])
      for device in [laptop, tablet] {
        try write(device.path("\(device.name).txt"), "made while the hub is away\n")
        let (result, seconds) = try device.sync(timeout: 2)
        print("docsync sync --timeout 2 on \(device.name), hub away: \(seconds) s")
        #expect(result.status == 1, "\(device.name): \(result)")
        #expect(
          result.stderr.contains("unreachable") || result.stderr.contains("not up to date"),
          "\(device.name): \(result.stderr)")
        #expect(seconds >= 2 && seconds < 3, "\(device.name): sync --timeout 2 took \(seconds) s")
      }
      try check([
        "sqlite3", "-cmd", ".timeout 10000", library.hub,
        "ALTER TABLE records_away RENAME TO records;",
      ])
      try laptop.sync()
      try tablet.sync()
      try desk.sync()
      #expect(try read(desk.path("laptop.txt")) == "made while the hub is away\n")
      #expect(try read(desk.path("tablet.txt")) == "made while the hub is away\n")
    }
  }
}
