import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

// Every two-device scenario of ConflictTests, PropagationTests, RobustnessTests and
// EditorTests also runs on a PostgreSQL hub: Tools/test runs those suites a second time with
// DOCSYNC_TEST_HUB=postgres. What only PostgreSQL has is tested here.

/// A file far larger than memory goes up and down in 1 MiB chunks: neither daemon's peak
/// memory grows with it.
@Suite("A large file on a PostgreSQL hub")
struct PostgresLargeFileTests {
  static let mebibytes = 2048
  /// Far below the file's size; what the daemons need is independent of it.
  static let memoryBoundMiB = 256.0

  @Test(
    "A 2 GiB file syncs A to B with each daemon's peak memory bounded",
    .needs("psql", "cmp"), .docsyncOnly, .postgresHub)
  func aLargeFileSyncsInBoundedMemory() throws {
    try LibraryHub.$current.withValue(.postgres) {
      try Library.with { library in
        let a = try library.device("laptop")
        let b = try library.device("desktop")
        #expect(FileManager.default.createFile(atPath: a.path("large.bin"), contents: nil))
        let file = try #require(FileHandle(forWritingAtPath: a.path("large.bin")))
        // Each mebibyte differs (its index is in it), so no chunk is stored once for many.
        var block = [UInt8](
          (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        for index in 0..<Self.mebibytes {
          withUnsafeBytes(of: UInt64(index).littleEndian) { block.replaceSubrange(0..<8, with: $0) }
          try file.write(contentsOf: block)
        }
        try file.close()
        try a.sync(timeout: 900)
        try b.sync(timeout: 900)
        try check(["cmp", a.path("large.bin"), b.path("large.bin")], timeout: .seconds(600))
        let peaks = try [a, b].map { try $0.peakMemoryMiB() }
        print(
          "2 GiB through PostgreSQL: peak memory laptop \(peaks[0]) MiB, desktop \(peaks[1]) MiB")
        for (device, peak) in zip([a, b], peaks) {
          #expect(peak < Self.memoryBoundMiB, "\(device.name) peaked at \(peak) MiB")
        }
      }
    }
  }
}

/// The hub's server stops while both devices edit, then starts again: the mounts keep working
/// offline, and once it is back nothing is lost, the document both edited has one conflict
/// version, and both devices agree. The server is a private cluster: the shared one serves
/// other tests in parallel.
@Suite("A PostgreSQL hub that stops for a while")
struct PostgresOutageTests {
  @Test(
    "Server stopped during edits on both devices, then started: no loss, one conflict, convergence",
    .needs("psql"), .docsyncOnly, .postgresHub)
  func serverStoppedDuringEditsOnBothDevices() throws {
    try TestEnvironment.require(programs: ["psql"])
    guard
      FileManager.default.isExecutableFile(
        atPath: "\(PrivatePostgresCluster.binaries)/initdb")
    else {
      throw TestFailure("no PostgreSQL 15 in \(PrivatePostgresCluster.binaries)")
    }
    let cluster = try PrivatePostgresCluster()
    defer { cluster.remove() }
    let hub = try cluster.newLibraryHub()
    try Library.with(hub: hub) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      for path in ["a/notes.md", "b/notes.md", "shared.md"] { try write(a.path(path), base(path)) }
      try library.sync(a, b)
      #expect(try read(b.path("shared.md")) == base("shared.md"))

      try cluster.stop()
      // Each device edits its own document, makes a new one, and both edit shared.md; B's
      // edit of it is the later one.
      try write(a.path("a/notes.md"), edit("a/notes.md", by: a))
      try write(a.path("a/new.md"), "new on laptop\n")
      try write(b.path("b/notes.md"), edit("b/notes.md", by: b))
      try write(b.path("b/new.md"), "new on desktop\n")
      try write(a.path("shared.md"), edit("shared.md", by: a))
      // A version's time is taken when it is recorded, a quiet moment (150 ms) after the last
      // write; on a loaded machine a few milliseconds apart could record in either order.
      usleep(500_000)
      try write(b.path("shared.md"), edit("shared.md", by: b))
      for device in [a, b] {
        // A sync cannot finish without the hub; it is what makes the engine meet the outage.
        let attempt = try device.trySync(timeout: 3)
        #expect(attempt.status != 0, "\(device.name) synced without a hub: \(attempt)")
        try waitForState("offline", of: device)
        // The mount keeps working: reads and writes go on.
        #expect(try read(device.path("shared.md")) == edit("shared.md", by: device))
        try write(device.path("offline-\(device.name).txt"), "written offline\n")
        #expect(try read(device.path("offline-\(device.name).txt")) == "written offline\n")
      }

      // A mount set up before starts again while the hub is away: it says so in one line
      // and serves its files.
      try a.unmount()
      let remount = try a.mount()
      #expect(
        remount.stderr.hasPrefix("docsync: warning: hub unreachable: ")
          && remount.stderr.contains("serving the local files"), "\(remount)")
      #expect(remount.stderr.split(separator: "\n").count == 1, "\(remount)")
      #expect(try read(a.path("offline-laptop.txt")) == "written offline\n")

      try cluster.start()
      // The engine retries with a backoff of up to 10 s.
      for device in [a, b, a] { try device.sync(timeout: 90) }

      for device in [a, b] {
        #expect(try read(device.path("a/notes.md")) == edit("a/notes.md", by: a), "\(device.name)")
        #expect(try read(device.path("b/notes.md")) == edit("b/notes.md", by: b), "\(device.name)")
        #expect(try read(device.path("a/new.md")) == "new on laptop\n", "\(device.name)")
        #expect(try read(device.path("b/new.md")) == "new on desktop\n", "\(device.name)")
        for writer in [a, b] {
          #expect(
            try read(device.path("offline-\(writer.name).txt")) == "written offline\n",
            "\(device.name)")
        }
        #expect(
          try currentAndVersions(device, "shared.md")
            == [edit("shared.md", by: b), edit("shared.md", by: a)], "\(device.name)")
        #expect(try device.status().conflicts.map(\.versions) == [1], "\(device.name)")
        #expect(try device.status().state != "offline", "\(device.name)")
      }
      #expect(try findVersions(a) == findVersions(b))
      try expectSameTree(a, b, mtimes: false)
    }
  }

  /// What a person can get wrong about a PostgreSQL hub: each gives one line and exit status 1
  /// at `docsync mount`, and nothing is mounted.
  @Test(
    "Wrong password, no TLS on the server, unreachable port, bad URL: one line, exit 1",
    .needs("psql"), .docsyncOnly, .postgresHub)
  func badHubsGiveOneClearLine() throws {
    try TestEnvironment.require(programs: ["psql"])
    let cluster = try PrivatePostgresCluster()
    defer { cluster.remove() }
    guard case .location(let url, let environment) = try cluster.newLibraryHub() else {
      throw TestFailure("a private cluster's hub is a location")
    }
    let closedPort = try PrivatePostgresCluster.freePort()
    let cases: [(String, String, [String: String], String)] = [
      ("wrong password", url, ["PGPASSWORD": "not-the-password"], "password"),
      (
        "no TLS", url.replacingOccurrences(of: "sslmode=disable", with: "sslmode=require"),
        environment, "TLS"
      ),
      (
        "unreachable", url.replacingOccurrences(of: ":\(cluster.port)/", with: ":\(closedPort)/"),
        environment, "unreachable"
      ),
      ("bad URL", "postgres://[::1/db", environment, "URL"),
    ]
    for (label, hub, variables, keyword) in cases {
      try MountFixture.withScratch { m throws in
        let result = try run(
          [
            try MountFixture.docsyncBinary(), "mount", m.mountPoint, "--state", m.state,
            "--hub", hub,
          ],
          env: variables, timeout: .seconds(60))
        let lines = result.stderr.split(separator: "\n")
        #expect(result.status == 1, "\(label): \(result)")
        #expect(lines.count == 1 && lines[0].hasPrefix("docsync: "), "\(label): \(result)")
        #expect(result.stderr.localizedCaseInsensitiveContains(keyword), "\(label): \(result)")
        #expect(!MountFixture.mountedPoints().contains(m.mountPoint), "\(label)")
        print("\(label): \(result.stderr)", terminator: "")
      }
    }
  }

  /// Polls `docsync status` until the device reports `state`; fails after a generous while.
  func waitForState(_ state: String, of device: Device) throws {
    let deadline = ContinuousClock.now + .seconds(60)
    var last = try device.status().state
    while last != state {
      guard ContinuousClock.now < deadline else {
        throw TestFailure("\(device.name) never reported \(state); last \(last)")
      }
      usleep(100_000)
      last = try device.status().state
    }
  }
}
