import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Bad input to `docsync mount`: exit 1 and one line on stderr that names the problem, or exit
/// 2 for wrong usage. Nothing may be left mounted.
@Suite("docsync command-line errors", .docsyncOnly)
struct CommandLineErrorTests {
  /// Runs docsync and checks the contract for an error: `status`, and exactly one stderr line
  /// starting with `docsync: ` that contains one of `keywords`.
  private func expectError(
    _ arguments: [String], status: Int32 = 1, keywords: [String], env: [String: String] = [:],
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let result = try run(
      [try MountFixture.docsyncBinary()] + arguments, env: env, timeout: .seconds(60))
    #expect(result.status == status, "\(result)", sourceLocation: sourceLocation)
    let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
      .filter { !$0.isEmpty }
    #expect(lines.count == 1, "want one line on stderr: \(result)", sourceLocation: sourceLocation)
    if let line = lines.first {
      #expect(line.hasPrefix("docsync: "), "\(line)", sourceLocation: sourceLocation)
      #expect(
        keywords.contains { line.localizedCaseInsensitiveContains($0) },
        "\(line) names none of \(keywords)", sourceLocation: sourceLocation)
    }
  }

  @Test(.needs())
  func mountPointThatDoesNotExist() throws {
    try MountFixture.withScratch { m throws in
      try expectError(
        ["mount", m.scratch("no-such-folder"), "--state", m.state], keywords: ["does not exist"])
      #expect(!MountFixture.mountedPoints().contains { $0.hasPrefix(m.base + "/") })
    }
  }

  /// Other devices refuse records whose device name holds control characters or is too long.
  @Test(.needs(), arguments: ["two\nlines", String(repeating: "n", count: 256)])
  func deviceNameThatOtherDevicesWouldRefuse(name: String) throws {
    try MountFixture.withScratch { m throws in
      let result = try run(
        [
          try MountFixture.docsyncBinary(), "mount", m.mountPoint, "--state", m.state, "--device",
          name,
        ],
        timeout: .seconds(60))
      #expect(result.status == 2, "\(result)")
      #expect(result.stderr.contains("--device"), "\(result)")
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }

  /// A timeout that is no number of seconds is wrong usage, caught before any arithmetic.
  @Test(.needs(), arguments: ["nan", "0", "-1", "inf", "1e300"])
  func syncTimeoutThatIsNotADuration(timeout: String) throws {
    try MountFixture.withScratch { m throws in
      let result = try run(
        [try MountFixture.docsyncBinary(), "sync", m.mountPoint, "--timeout", timeout],
        timeout: .seconds(60))
      #expect(result.status == 2, "\(result)")
      #expect(result.stderr.contains("--timeout"), "\(result)")
    }
  }

  @Test(.needs())
  func mountPointThatIsAFile() throws {
    try MountFixture.withScratch { m throws in
      try write(m.scratch("a-file"), "not a folder\n")
      try expectError(
        ["mount", m.scratch("a-file"), "--state", m.state], keywords: ["not a directory"])
    }
  }

  @Test(.needs())
  func mountPointAlreadyMounted() throws {
    try MountFixture.withMount { m throws in
      try FileManager.default.createDirectory(
        atPath: m.scratch("state2"), withIntermediateDirectories: true)
      try expectError(
        ["mount", m.mountPoint, "--state", m.scratch("state2")],
        keywords: ["is already a docsync mount"])
      // The failed second mount must not have disturbed the first.
      try write(m.path("still-works.txt"), "yes\n")
      #expect(try read(m.path("still-works.txt")) == "yes\n")
    }
  }

  @Test(.needs())
  func stateFolderNotWritable() throws {
    try MountFixture.withScratch { m throws in
      // A path under a regular file cannot be created even by root, unlike a chmod 0 folder.
      try write(m.scratch("blocker"), "a file\n")
      try expectError(
        ["mount", m.mountPoint, "--state", m.scratch("blocker/state")], keywords: ["not writable"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }

  @Test(.needs())
  func fuseDeviceMissing() throws {
    try MountFixture.withScratch { m throws in
      // The binary honours DOCSYNC_FUSE_DEVICE for exactly this test: removing the real
      // /dev/fuse would break every other mount on the machine.
      try expectError(
        ["mount", m.mountPoint, "--state", m.state], keywords: ["/dev/fuse", "/nonexistent/fuse"],
        env: ["DOCSYNC_FUSE_DEVICE": "/nonexistent/fuse"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }

  @Test(.needs())
  func mountPointThatIsNotEmpty() throws {
    try MountFixture.withScratch { m throws in
      try write(m.path("keep-me.txt"), "mine\n")
      try expectError(["mount", m.mountPoint, "--state", m.state], keywords: ["is not empty"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
      #expect(try read(m.path("keep-me.txt")) == "mine\n")
    }
  }

  @Test(.needs())
  func stateFolderInUseByAnotherMount() throws {
    try MountFixture.withMount { m throws in
      try FileManager.default.createDirectory(
        atPath: m.scratch("second"), withIntermediateDirectories: true)
      try expectError(
        ["mount", m.scratch("second"), "--state", m.state, "--hub", m.scratch("hub.sqlite")],
        keywords: ["in use by another docsync mount"])
      #expect(!MountFixture.mountedPoints().contains(m.scratch("second")))
    }
  }

  @Test(.needs("sleep"))
  func unmountWhileBusy() throws {
    try MountFixture.withMount(programs: ["sleep"]) { m throws in
      try write(m.path("doc.txt"), "text\n")
      do {
        // A shell whose current folder is in the mount is what makes a mount busy in practice.
        let holder = try BackgroundProcess(["sleep", "600"], cwd: m.mountPoint)
        try expectError(["unmount", m.mountPoint], keywords: ["is busy"])
        #expect(MountFixture.mountedPoints().contains(m.mountPoint))
        kill(holder.pid, SIGKILL)
        _ = try holder.wait()
      }
      #expect(try read(m.path("doc.txt")) == "text\n")
    }
  }

  @Test(.needs())
  func stateFolderOfAnotherLibrary() throws {
    try MountFixture.withMount { m throws in
      try write(m.path("doc.txt"), "text\n")
      try m.unmount()
      try expectError(
        ["mount", m.mountPoint, "--state", m.state, "--hub", m.scratch("other-hub.sqlite")],
        keywords: ["belongs to the library on hub"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
      #expect(!FileManager.default.fileExists(atPath: m.scratch("other-hub.sqlite")))
      // The right hub still mounts it, with everything in place.
      try m.mount()
      #expect(try read(m.path("doc.txt")) == "text\n")
    }
  }

  @Test(.needs())
  func hubThatWentMissing() throws {
    try MountFixture.withMount { m throws in
      try write(m.path("doc.txt"), "text\n")
      try m.unmount()
      let hub = m.scratch("hub.sqlite")
      try FileManager.default.moveItem(atPath: hub, toPath: hub + ".moved")
      try expectError(
        ["mount", m.mountPoint, "--state", m.state, "--hub", hub], keywords: ["is missing"])
      #expect(!FileManager.default.fileExists(atPath: hub), "an empty hub was made in its place")
      try FileManager.default.moveItem(atPath: hub + ".moved", toPath: hub)
      try m.mount()
      #expect(try read(m.path("doc.txt")) == "text\n")
    }
  }

  @Test(.needs())
  func hubWhoseFolderCannotBeMade() throws {
    try MountFixture.withScratch { m throws in
      try write(m.scratch("blocker"), "a file\n")
      try expectError(
        ["mount", m.mountPoint, "--state", m.state, "--hub", m.scratch("blocker/hub.sqlite")],
        keywords: ["cannot create the folder"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }

  @Test(.needs())
  func hubThatIsAFolder() throws {
    try MountFixture.withScratch { m throws in
      try FileManager.default.createDirectory(
        atPath: m.scratch("hub-folder"), withIntermediateDirectories: true)
      try expectError(
        ["mount", m.mountPoint, "--state", m.state, "--hub", m.scratch("hub-folder")],
        keywords: ["is a folder, not a hub"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }

  @Test(.needs())
  func hubThatIsNotADatabase() throws {
    try MountFixture.withScratch { m throws in
      // Tests run as root, so permissions cannot make a file unreadable; a damaged one can.
      let junk = String(repeating: "not a database, just words. ", count: 200)
      try write(m.scratch("hub.sqlite"), junk)
      try expectError(
        ["mount", m.mountPoint, "--state", m.state, "--hub", m.scratch("hub.sqlite")],
        keywords: ["is not a SQLite database"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
      #expect(try read(m.scratch("hub.sqlite")) == junk)
    }
  }

  @Test(.needs())
  func hubOfAnUnknownKind() throws {
    try MountFixture.withScratch { m throws in
      try expectError(
        ["mount", m.mountPoint, "--state", m.state, "--hub", "ftp://example.org/hub"],
        keywords: ["unknown hub kind"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }

  /// A hub file that a newer docsync changed so that this one cannot use it: a new mount is
  /// refused in one line that says what to do; a mount set up before serves its files (with a
  /// warning), and `docsync sync` gives the same line.
  @Test(.needs("sqlite3"))
  func hubThatNeedsANewerDocsync() throws {
    try MountFixture.withMount { m throws in
      try write(m.path("kept.txt"), "kept\n")
      _ = try check([try MountFixture.docsyncBinary(), "sync", m.mountPoint])
      try m.unmount()
      let hub = m.scratch("hub.sqlite")
      _ = try check([
        "sqlite3", hub, "INSERT INTO settings (key, value) VALUES ('devices_from', '99')",
      ])
      let other = m.scratch("second-mount")
      let otherState = m.scratch("second-state")
      try MountFixture.makePrivateFolder(other)
      try MountFixture.makePrivateFolder(otherState)
      try expectError(
        ["mount", other, "--state", otherState, "--hub", hub],
        keywords: ["this hub needs a newer docsync"])
      #expect(!MountFixture.mountedPoints().contains(other))

      try m.mount()
      #expect(try read(m.path("kept.txt")) == "kept\n")
      try expectError(["sync", m.mountPoint], keywords: ["upgrade docsync on this device"])
    }
  }

  /// A new mount cannot show anything without its hub, so an unreachable one is an error
  /// there; a mount set up before serves offline (EndToEndTests' PostgreSQL outage shows it).
  @Test(.needs())
  func hubThatIsUnreachable() throws {
    try MountFixture.withScratch { m throws in
      // Port 1 on loopback: nothing listens there, so the connection is refused at once.
      let hub = "postgres://docsync@127.0.0.1:1/docsync?sslmode=disable"
      try expectError(
        ["mount", m.mountPoint, "--state", m.state, "--hub", hub],
        keywords: ["unreachable"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
      // Nothing was recorded, so the same state folder may be given another hub.
      #expect(!FileManager.default.fileExists(atPath: m.state + "/hub"))
    }
  }

  /// A role the administrator forgot to put in an account could read nothing and write
  /// nothing (row-level security): the first mount says so, and how to fix it.
  @Test(.needs("psql"), .postgresHub)
  func postgresRoleWithoutAnAccount() throws {
    let (hub, environment, cleanup) = try TestPostgres.newRoleWithoutAccount()
    defer { cleanup() }
    try MountFixture.withScratch { m throws in
      try expectError(
        ["mount", m.mountPoint, "--state", m.state, "--hub", hub],
        keywords: ["belongs to no docsync account"], env: environment)
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
      #expect(!FileManager.default.fileExists(atPath: m.state + "/hub"))
    }
  }

  /// An ordinary user who cannot open /dev/fuse learns its mode and the fix. Root opens any
  /// device whatever its mode, so this holds only for the ordinary user Tools/test runs the
  /// mount tests as.
  @Test(.needs())
  func fuseDeviceThisUserCannotOpen() throws {
    try #require(getuid() != 0, "run the mount tests as an ordinary user (Tools/test does)")
    try MountFixture.withScratch { m throws in
      let device = m.scratch("fuse")
      try write(device, "")
      chmod(device, 0o000)
      try expectError(
        ["mount", m.mountPoint, "--state", m.state], keywords: ["is mode 0000, owned by"],
        env: ["DOCSYNC_FUSE_DEVICE": device])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }

  @Test(.needs())
  func commandsToAMountWhoseProcessDied() throws {
    try MountFixture.withMount { m throws in
      let pid = try m.daemonPID()
      kill(pid, SIGKILL)
      while kill(pid, 0) == 0 { usleep(10_000) }
      for command in [["status", m.mountPoint], ["sync", m.mountPoint], ["pause", m.mountPoint]] {
        try expectError(command, keywords: ["is not running"])
      }
      // The way out that the message names.
      try check([try MountFixture.docsyncBinary(), "unmount", m.mountPoint])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
      m.markUnmounted()
    }
  }

  @Test(.needs())
  func commandsToAFolderThatIsNotAMount() throws {
    try MountFixture.withScratch { m throws in
      try expectError(["status", m.mountPoint], keywords: ["is not a docsync mount"])
      try expectError(["sync", m.scratch("nowhere")], keywords: ["does not exist"])
      try write(m.scratch("doc.txt"), "x\n")
      try expectError(["versions", m.scratch("doc.txt")], keywords: ["not in a docsync mount"])
    }
  }

  @Test(.needs("touch"))
  func aNameThatIsTooLong() throws {
    try MountFixture.withMount(programs: ["touch"]) { m throws in
      let name = String(repeating: "n", count: 300)
      let result = try run(["touch", name], cwd: m.mountPoint)
      #expect(result.status == 1, "\(result)")
      #expect(result.stderr.contains("File name too long"), "\(result)")
      #expect(try FileManager.default.contentsOfDirectory(atPath: m.mountPoint) == [".versions"])
    }
  }

  @Test(.needs("sh"))
  func aWriteIntoVersions() throws {
    try MountFixture.withMount(programs: ["sh"]) { m throws in
      let result = try run(["sh", "-c", "echo x > .versions/new.txt"], cwd: m.mountPoint)
      #expect(result.status != 0, "\(result)")
      #expect(result.stderr.contains("Read-only file system"), "\(result)")
      #expect(!FileManager.default.fileExists(atPath: m.path(".versions/new.txt")))
    }
  }

  @Test(.needs(fuse: false))
  func unknownSubcommandIsAUsageError() throws {
    let result = try run([try MountFixture.docsyncBinary(), "frobnicate"])
    #expect(result.status == 2, "\(result)")
  }

  @Test(.needs(fuse: false))
  func unknownFlagIsAUsageError() throws {
    try MountFixture.withScratch { m throws in
      let result = try run(
        [try MountFixture.docsyncBinary(), "mount", m.mountPoint, "--no-such-flag"])
      #expect(result.status == 2, "\(result)")
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }
}
