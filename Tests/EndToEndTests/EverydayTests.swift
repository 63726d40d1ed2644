import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What `docsync versions --json` prints.
struct VersionsOutput: Decodable, Equatable {
  struct Version: Decodable, Equatable {
    var name: String?
    var current: Bool
    var device: String
    var modified: String
    var size: UInt64
    var command: String?
  }
  struct View: Decodable, Equatable {
    var name: String
    var kind: String
    var command: String
  }
  var mountPoint: String
  var path: String
  var versions: [Version]
  var views: [View]?
}

/// `docsync status` and `docsync versions` in a real conflict, as people and scripts read them.
@Suite("status and versions in a conflict", .docsyncOnly)
struct StatusAndVersionsTests {
  @Test(.needs("sh"))
  func statusAndVersionsShowAConflictAndTheCommandThatResolvesIt() throws {
    try Library.with(programs: ["sh"]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try makeConflicts(library, a, b, paths: ["notes/plan.md"])
      let binary = try MountFixture.docsyncBinary()
      let versionName = try #require(try versionNames(a, of: "notes/plan.md").first)

      let human = try check([binary, "status", a.mountPoint]).stdout.split(separator: "\n")
      // The last sync moves on while the mount runs; every other line is fixed.
      #expect(human.count == 7, "\(human)")
      #expect(
        human.enumerated().filter { $0.offset != 4 }.map { String($0.element) } == [
          a.mountPoint,
          "  device:    laptop",
          "  hub:       \(library.hub)",
          "  state:     up to date",
          "  conflicts: 1",
          "    notes/plan.md (1 version in .versions/notes/plan.md/)",
        ], "\(human)")
      #expect(human.count > 4 && human[4].hasPrefix("  last sync: 20"), "\(human)")
      let status = try a.status()
      #expect(status.state == "up to date")
      #expect(status.conflicts.map { "\($0.path) \($0.versions)" } == ["notes/plan.md 1"])
      let raw = try check([binary, "status", a.mountPoint, "--json"]).stdout
      let object = try #require(
        try JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any])
      #expect(
        Set(object.keys).isSuperset(of: [
          "mountPoint", "device", "deviceID", "hub", "state", "pendingUploads", "upload",
          "download", "lastSync", "conflicts",
        ]), "\(raw)")
      let upload = try #require(object["upload"] as? [String: Any])
      #expect(Set(upload.keys) == ["doneFiles", "doneBytes", "totalFiles", "totalBytes"])

      // Without a mount point: every mount of the user, as an array.
      // Other tests' mounts may be listed too, some of them not running (no device then).
      let all = try check([binary, "status", "--json"]).stdout
      let list = try #require(
        try JSONSerialization.jsonObject(with: Data(all.utf8)) as? [[String: Any]])
      for device in [a, b] {
        let entry = list.first { $0["mountPoint"] as? String == device.mountPoint }
        #expect(entry?["device"] as? String == device.name, "\(all)")
      }
      #expect(
        try check([binary, "status"]).stdout.contains("\(b.mountPoint)\n  device:    desktop"))

      let versionsText = try check([binary, "versions", a.path("notes/plan.md")]).stdout
      let folder = "\(a.mountPoint)/.versions/notes/plan.md"
      let lines = versionsText.split(separator: "\n").map(String.init)
      // Two lines per version, then two per view of the text document (merged.md, base.md).
      #expect(lines.count == 9, "\(versionsText)")
      #expect(
        lines.first
          == "\(a.mountPoint)/notes/plan.md: 1 conflict version in .versions/notes/plan.md/")
      #expect(lines.contains("           keep it:   rm -r '\(folder)'"), "\(versionsText)")
      #expect(
        lines.contains(
          "           choose it: cp '\(folder)/\(versionName)' '\(a.mountPoint)/notes/plan.md'"),
        "\(versionsText)")
      #expect(lines[1].hasPrefix("  current  ") && lines[1].contains("desktop"), "\(lines[1])")
      #expect(lines[3].hasPrefix("  conflict ") && lines[3].hasSuffix(versionName), "\(lines[3])")
      #expect(lines[5].hasPrefix("  merged   merged.md: a three-way merge"), "\(versionsText)")
      #expect(
        lines[6]
          == "           take it:   cp '\(folder)/merged.md' '\(a.mountPoint)/notes/plan.md'",
        "\(versionsText)")
      #expect(lines[7].hasPrefix("  base     base.md: "), "\(versionsText)")
      #expect(
        lines[8]
          == "           compare:   diff -u '\(folder)/base.md' '\(a.mountPoint)/notes/plan.md'",
        "\(versionsText)")

      let json = try check([binary, "versions", a.path("notes/plan.md"), "--json"]).stdout
      let versions = try JSONDecoder().decode(VersionsOutput.self, from: Data(json.utf8))
      #expect(versions.mountPoint == a.mountPoint && versions.path == "notes/plan.md")
      #expect(versions.versions.count == 2)
      #expect(versions.views?.map(\.name) == ["merged.md", "base.md"])
      #expect(versions.views?.map(\.kind) == ["merged", "base"])
      let current = try #require(versions.versions.first)
      #expect(current.current && current.name == nil && current.device == "desktop")
      #expect(current.size == UInt64(edit("notes/plan.md", by: b).utf8.count))
      #expect(current.command == "rm -r '\(folder)'")
      let other = try #require(versions.versions.last)
      #expect(!other.current && other.name == versionName && other.device == "laptop")
      #expect(other.size == UInt64(edit("notes/plan.md", by: a).utf8.count))
      #expect(isVersionName(versionName, device: "laptop", extension: ".md"))
      #expect(versionName.hasPrefix(other.modified.replacingOccurrences(of: ":", with: ".")))

      // The same document named relative to the current folder, and by its .versions folder.
      let relative = try check(
        [binary, "versions", "plan.md", "--json"], cwd: a.path("notes")
      ).stdout
      #expect(try JSONDecoder().decode(VersionsOutput.self, from: Data(relative.utf8)) == versions)
      let byVersion = try check(
        [binary, "versions", "\(folder)/\(versionName)", "--json"]
      ).stdout
      #expect(try JSONDecoder().decode(VersionsOutput.self, from: Data(byVersion.utf8)) == versions)

      // The printed command does what it says, on every device.
      try check(["sh", "-c", try #require(other.command)])
      try library.sync(a, b)
      for device in [a, b] {
        #expect(try read(device.path("notes/plan.md")) == edit("notes/plan.md", by: a))
        #expect(try device.status().conflicts.isEmpty, "\(device.name)")
      }
      let resolved = try check([binary, "versions", b.path("notes/plan.md")]).stdout
      #expect(resolved.hasPrefix("\(b.mountPoint)/notes/plan.md: no conflict\n"), "\(resolved)")
      #expect(!resolved.contains("keep it") && !resolved.contains("merged"), "\(resolved)")

      // One info line per sync event in the daemons' logs.
      #expect(a.log().contains("pushed 1 version(s)"), "\(a.logTail())")
      #expect(b.log().contains("pulled 1 version(s)"), "\(b.logTail())")
      #expect(a.log().contains("conflict at notes/plan.md"), "\(a.logTail())")
    }
  }
}

/// Editor litter and `.docsyncignore` patterns work in the mount but never reach the hub; the
/// `.docsyncignore` file itself syncs and its patterns apply on every device.
@Suite("Ignore rules across devices", .docsyncOnly)
struct IgnoreRulesAcrossDevicesTests {
  /// How many hub records mention `name` (a version record carries its path as plain bytes).
  private func hubRecords(mentioning name: String, _ library: Library) throws -> Int {
    let hex = Array(name.utf8).map { String(format: "%02X", $0) }.joined()
    let result = try check([
      "sqlite3", library.hub, "SELECT count(*) FROM records WHERE instr(payload, X'\(hex)') > 0;",
    ])
    return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
  }

  @Test(.needs("sqlite3"))
  func ignoredFilesStayLocalAndTheIgnoreFileSyncs() throws {
    try Library.with(programs: ["sqlite3"]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("kept.txt"), "kept, version 1\n")
      try library.sync(a, b)

      try write(a.path(".docsyncignore"), "# build output\n*.log\nbuild/\n/kept.txt\n")
      try FileManager.default.createDirectory(
        atPath: a.path("build/deep"), withIntermediateDirectories: true)
      let ignored = [
        "debug.log", "build/deep/out.o", "~$report.docx", "film.mkv.part", ".notes.md.swp",
        "notes.md~",
      ]
      for name in ignored { try write(a.path(name), "local only: \(name)\n") }
      try write(a.path("notes.md"), "notes\n")
      try library.sync(a, b)

      // Ignored files work normally where they were made.
      for name in ignored { #expect(try read(a.path(name)) == "local only: \(name)\n") }
      try write(a.path("debug.log"), "appended\n")
      #expect(try read(a.path("debug.log")) == "appended\n")
      try FileManager.default.moveItem(atPath: a.path("debug.log"), toPath: a.path("old.log"))
      #expect(try read(a.path("old.log")) == "appended\n")
      try a.sync()

      #expect(try read(b.path(".docsyncignore")) == "# build output\n*.log\nbuild/\n/kept.txt\n")
      #expect(try read(b.path("notes.md")) == "notes\n")
      let onB = try FileManager.default.contentsOfDirectory(atPath: b.mountPoint).sorted()
      #expect(onB == [".docsyncignore", ".versions", "kept.txt", "notes.md"], "\(onB)")
      for name in ignored + ["old.log", "build"] {
        #expect(try hubRecords(mentioning: name, library) == 0, "\(name) reached the hub")
      }
      #expect(try hubRecords(mentioning: ".docsyncignore", library) == 1)
      #expect(try hubRecords(mentioning: "notes.md", library) == 1)

      // The patterns that arrived apply on B too.
      try write(b.path("b.log"), "desktop's log\n")
      try library.sync(b, a)
      #expect(!FileManager.default.fileExists(atPath: a.path("b.log")))
      #expect(try hubRecords(mentioning: "b.log", library) == 0)

      // kept.txt synced before it became ignored: it stays on every device, and from now on
      // changes to it stay where they are made.
      #expect(try read(b.path("kept.txt")) == "kept, version 1\n")
      try write(b.path("kept.txt"), "desktop's change\n")
      try library.sync(b, a)
      #expect(try read(a.path("kept.txt")) == "kept, version 1\n")
      try FileManager.default.removeItem(atPath: a.path("kept.txt"))
      try library.sync(a, b)
      #expect(try read(b.path("kept.txt")) == "desktop's change\n")

      // Dropping a pattern makes the files it hid sync from now on.
      try write(b.path(".docsyncignore"), "*.log\n/kept.txt\n")
      try library.sync(b, a, b)
      #expect(try read(b.path("build/deep/out.o")) == "local only: build/deep/out.o\n")
      for device in [a, b] { #expect(try device.status().conflicts.isEmpty, "\(device.name)") }
    }
  }
}

/// Editors driven as a person drives them, through a terminal (tmux), in a mount that syncs.
@Suite("Editors in a terminal", .docsyncOnly)
struct TerminalEditorTests {
  /// A tmux server of its own, so that tests never touch a person's sessions.
  final class Terminal {
    let socket = "docsync-test-\(UUID().uuidString.prefix(8))"

    init(command: [String], cwd: String) throws {
      try check(
        ["tmux", "-L", socket, "new-session", "-d", "-x", "100", "-y", "30", "-c", cwd]
          + command, env: ["TERM": "xterm-256color"])
    }

    deinit { _ = try? run(["tmux", "-L", socket, "kill-server"]) }

    func screen() throws -> String {
      try check(["tmux", "-L", socket, "capture-pane", "-p"]).stdout
    }

    func send(_ keys: String...) throws {
      try check(["tmux", "-L", socket, "send-keys"] + keys)
    }

    /// Types `text` literally (no key names).
    func type(_ text: String) throws {
      try check(["tmux", "-L", socket, "send-keys", "-l", text])
    }

    func waitFor(_ text: String) throws {
      let deadline = ContinuousClock.now + .seconds(30)
      while !(try screen().contains(text)) {
        guard ContinuousClock.now < deadline else {
          throw TestFailure("the terminal never showed \(text.debugDescription):\n\(try screen())")
        }
        usleep(50_000)
      }
    }

    /// Waits until the program in the terminal has exited (the session then ends).
    func waitForExit() throws {
      let deadline = ContinuousClock.now + .seconds(30)
      while try run(["tmux", "-L", socket, "has-session"]).status == 0 {
        guard ContinuousClock.now < deadline else {
          throw TestFailure("the editor did not exit:\n\(try screen())")
        }
        usleep(50_000)
      }
    }
  }

  private func expectOnlyDocument(
    _ device: Device, sourceLocation: SourceLocation = #_sourceLocation
  )
    throws
  {
    let names = try FileManager.default.contentsOfDirectory(atPath: device.mountPoint).sorted()
    #expect(names == [".versions", "doc.txt"], "\(device.name)", sourceLocation: sourceLocation)
    #expect(try findVersions(device).isEmpty, "\(device.name)", sourceLocation: sourceLocation)
    #expect(try device.status().conflicts.isEmpty, sourceLocation: sourceLocation)
  }

  @Test(.needs("tmux", "nano"))
  func nanoSavesSyncWithoutConflictOrLitter() throws {
    try Library.with(programs: ["tmux", "nano"]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("doc.txt"), "first line\n")
      try library.sync(a, b)

      // --ignorercfile: the user's and the system's nanorc must not change how it saves.
      let terminal = try Terminal(
        command: ["nano", "--ignorercfile", "doc.txt"], cwd: a.mountPoint)
      try terminal.waitFor("first line")
      try terminal.send("C-End")
      try terminal.type("typed in nano")
      try terminal.send("C-o")
      try terminal.waitFor("File Name to Write")
      try terminal.send("Enter")
      try terminal.waitFor("Wrote")
      try terminal.send("C-x")
      try terminal.waitForExit()

      #expect(try read(a.path("doc.txt")) == "first line\ntyped in nano\n")
      try library.sync(a, b)
      #expect(try read(b.path("doc.txt")) == "first line\ntyped in nano\n")
      try expectOnlyDocument(a)
      try expectOnlyDocument(b)
    }
  }

  @Test(.needs("tmux", "vim"))
  func vimSavesSyncWithoutConflictOrLitter() throws {
    try Library.with(programs: ["tmux", "vim"]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("doc.txt"), "first line\n")
      try library.sync(a, b)

      // Defaults, not the machine's vimrc: swap file, backup by rename, the 4913 probe.
      let terminal = try Terminal(
        command: ["vim", "-N", "-u", "DEFAULTS", "-i", "NONE", "doc.txt"], cwd: a.mountPoint)
      try terminal.waitFor("first line")
      #expect(FileManager.default.fileExists(atPath: a.path(".doc.txt.swp")))
      // While vim is open its swap file exists on A; it must not travel.
      try library.sync(a, b)
      #expect(!FileManager.default.fileExists(atPath: b.path(".doc.txt.swp")))
      try terminal.type("Otyped in vim")
      try terminal.send("Escape")
      try terminal.type(":w")
      try terminal.send("Enter")
      try terminal.waitFor("written")
      // A save reaches the other device while vim stays open (its swap file open for writing).
      try library.sync(a, b)
      #expect(try read(b.path("doc.txt")) == "typed in vim\nfirst line\n")
      try terminal.type("Gosecond save")
      try terminal.send("Escape")
      try terminal.type(":wq")
      try terminal.send("Enter")
      try terminal.waitForExit()

      #expect(try read(a.path("doc.txt")) == "typed in vim\nfirst line\nsecond save\n")
      try library.sync(a, b)
      #expect(try read(b.path("doc.txt")) == "typed in vim\nfirst line\nsecond save\n")
      try expectOnlyDocument(a)
      try expectOnlyDocument(b)
    }
  }
}

/// `Tools/demo` plays README's walkthrough by itself, to the end.
@Suite("Tools/demo", .docsyncOnly)
struct DemoTests {
  @Test(.needs("bash", "diff", "find"))
  func demoRunsToTheEnd() throws {
    try TestEnvironment.require(programs: ["bash", "diff", "find"])
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent().path
    let result = try run(
      ["bash", "\(root)/Tools/demo"],
      env: ["DOCSYNC_BIN": try MountFixture.docsyncBinary()], timeout: .seconds(300))
    #expect(result.status == 0, "\(result)")
    #expect(result.stdout.contains("# Done: the demo unmounts both devices"), "\(result)")
    #expect(result.stdout.contains("desktop: notes\ndesktop: notes\n"), "\(result)")
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: "/var/tmp")
      .filter { $0.hasPrefix("docsync-demo.") }
    // Only this run's folder matters, but parallel demo runs do not exist in one test process.
    #expect(leftovers.isEmpty, "\(leftovers)")
  }
}
