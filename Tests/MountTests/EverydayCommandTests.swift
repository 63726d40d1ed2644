import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The systemd user unit's own command lines, run as systemd would run them (SystemdService:
/// its environment, quoting and substitutions) for a user whose home is a scratch folder and
/// who wrote no environment file: the mount comes up at ~/docsync on the default hub, serves,
/// and a SIGTERM unmounts it cleanly. PackageAsRootTests runs the packaged unit with an
/// environment file.
@Suite("Tools/docsync.service", .docsyncOnly)
struct ServiceUnitTests {
  @Test(.needs("mkdir", "sh"))
  func theUnitsCommandsMountAndStop() throws {
    try MountFixture.withScratch { m throws in
      let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
      let unit = try String(contentsOfFile: "\(root)/Tools/docsync.service", encoding: .utf8)
      let home = m.scratch("home")
      try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
      let service = SystemdService(unit: unit, home: home)
      let variables = try service.environment()
      #expect(variables == ["DOCSYNC_FOLDER": "\(home)/docsync"])
      let binary = try MountFixture.docsyncBinary()
      func command(_ key: String) throws -> [String] {
        try #require(service.commands(key, environment: variables).first)
          .map { $0.replacingOccurrences(of: "/usr/bin/docsync", with: binary) }
      }
      // The daemon finds its default hub and state from HOME, as under systemd.
      let environment =
        ["env", "-u", "XDG_DATA_HOME", "HOME=\(home)"]
        + variables.map { "\($0.key)=\($0.value)" }
      try check(environment + (try command("ExecStartPre")))
      let process = try BackgroundProcess(environment + (try command("ExecStart")))
      try process.waitForOutput("ready \(home)/docsync")
      try write("\(home)/docsync/doc.txt", "from the service\n")
      #expect(try read("\(home)/docsync/doc.txt") == "from the service\n")
      kill(process.pid, SIGTERM)
      #expect(try process.wait(timeout: .seconds(60)) == 0)
      #expect(!MountFixture.mountedPoints().contains("\(home)/docsync"))
      #expect(FileManager.default.fileExists(atPath: "\(home)/.local/share/docsync/hub.sqlite"))
    }
  }
}

/// `--log-level`: one info line per sync event by default, details at debug, less above.
@Suite("docsync mount --log-level", .docsyncOnly)
struct LogLevelTests {
  private func logAfterOneSync(level: String) throws -> String {
    try MountFixture.withScratch { m throws in
      let binary = try MountFixture.docsyncBinary()
      try check([
        binary, "mount", m.mountPoint, "--state", m.state, "--hub", m.scratch("hub.sqlite"),
        "--log-level", level,
      ])
      defer { _ = try? run([binary, "unmount", m.mountPoint]) }
      try write(m.path("doc.txt"), "text\n")
      try check([binary, "sync", m.mountPoint])
      return (try? String(contentsOfFile: "\(m.state)/docsync.log", encoding: .utf8)) ?? ""
    }
  }

  @Test(.needs())
  func debugShowsDetailsAndWarningHidesEvents() throws {
    let debug = try logAfterOneSync(level: "debug")
    #expect(debug.contains("pushed 1 version(s)"), "\(debug)")
    #expect(debug.contains("pushed versions of doc.txt"), "\(debug)")
    let info = try logAfterOneSync(level: "info")
    #expect(info.contains("pushed 1 version(s)"), "\(info)")
    #expect(!info.contains("pushed versions of doc.txt"), "\(info)")
    let warning = try logAfterOneSync(level: "warning")
    #expect(!warning.contains("pushed"), "\(warning)")
  }

  @Test(.needs(fuse: false))
  func anUnknownLevelIsAUsageError() throws {
    let result = try run([
      try MountFixture.docsyncBinary(), "mount", "/nowhere", "--log-level", "loud",
    ])
    #expect(result.status == 2, "\(result)")
  }
}

/// The transfer counters behind `status` and the progress line of `docsync sync`.
@Suite("status transfer counters", .docsyncOnly)
struct TransferCounterTests {
  @Test(.needs())
  func pausedUploadsAreCountedAndSyncPrintsNothingWithoutATerminal() throws {
    try MountFixture.withMount { m throws in
      let binary = try MountFixture.docsyncBinary()
      func status() throws -> [String: Any] {
        let text = try check([binary, "status", m.mountPoint, "--json"]).stdout
        return try #require(
          try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
      }
      try check([binary, "pause", m.mountPoint])
      let sizes = [1000, 20_000, 300_000]
      for (index, size) in sizes.enumerated() {
        try write(m.path("file\(index)"), String(repeating: "x", count: size))
      }
      // Versions are recorded while paused, after a quiet moment; wait for all three.
      let deadline = ContinuousClock.now + .seconds(30)
      while try status()["pendingUploads"] as? Int != sizes.count {
        guard ContinuousClock.now < deadline else {
          Issue.record("never 3 pending uploads: \(try status())")
          return
        }
        usleep(50_000)
      }
      let paused = try status()
      #expect(paused["state"] as? String == "paused")
      let upload = try #require(paused["upload"] as? [String: Any])
      #expect(upload["totalFiles"] as? Int == sizes.count, "\(upload)")
      #expect(upload["totalBytes"] as? Int == sizes.reduce(0, +), "\(upload)")
      #expect(upload["doneFiles"] as? Int == 0, "\(upload)")
      let text = try check([binary, "status", m.mountPoint]).stdout
      #expect(text.contains("  state:     paused\n"), "\(text)")

      try check([binary, "resume", m.mountPoint])
      let sync = try check([binary, "sync", m.mountPoint])
      #expect(sync.stdout.isEmpty && sync.stderr.isEmpty, "progress without a terminal: \(sync)")
      let done = try status()
      #expect(done["state"] as? String == "up to date")
      #expect(done["pendingUploads"] as? Int == 0)
    }
  }
}
