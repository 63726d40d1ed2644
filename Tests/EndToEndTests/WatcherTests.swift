import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Programs that watch files on B (inotify, GIO) hear what sync changes there, as they hear a
/// local program: one set of events per change, none for what did not change, and sync never
/// takes its own events for edits.
@Suite("Watchers hear sync's changes")
struct WatcherTests {
  /// A program watching on B, its stderr folded into its output.
  private func watch(_ command: String, ready: String? = nil) throws -> BackgroundProcess {
    let process = try BackgroundProcess(["sh", "-c", "exec \(command) 2>&1"])
    if let ready {
      try process.waitForOutput(ready)
    } else {
      // GIO prints nothing once its monitors are set up.
      usleep(1_000_000)
    }
    return process
  }

  private func stop(_ process: BackgroundProcess) {
    kill(process.pid, SIGTERM)
    _ = try? process.wait(timeout: .seconds(10))
  }

  /// Waits up to two seconds for every line of `expected` to appear in `process`'s output.
  private func expectLines(
    _ process: BackgroundProcess, _ expected: [String],
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let deadline = ContinuousClock.now + .seconds(2)
    var lines: Set<String> = []
    repeat {
      lines = Set(process.output.split(separator: "\n").map(String.init))
      if expected.allSatisfy(lines.contains) { break }
      usleep(20_000)
    } while ContinuousClock.now < deadline
    for line in expected {
      #expect(
        lines.contains(line), "no \(line.debugDescription) in:\n\(process.output)",
        sourceLocation: sourceLocation)
    }
  }

  private func quote(_ path: String) -> String { "'\(path)'" }

  /// The current version of `path` is A's ("laptop"), with no conflict: B's events made none.
  private func expectMadeOnA(
    _ binary: String, _ path: String, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let lines = try check([binary, "versions", path]).stdout.split(separator: "\n")
    #expect(
      lines.first?.hasSuffix(": no conflict") == true, "\(lines)", sourceLocation: sourceLocation)
    #expect(
      lines.count > 1 && lines[1].hasPrefix("  current  ") && lines[1].contains("laptop"),
      "\(lines)", sourceLocation: sourceLocation)
  }

  @Test(
    "inotifywait and gio monitor on B report each change A makes, within 2 s, and nothing else",
    .needs("inotifywait", "gio"), .docsyncOnly)
  func everyKindOfChangeIsHeard() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("keep.txt"), "never changes\n")
      try write(a.path("n.txt"), "one\n")
      try write(a.path("gone.txt"), "deleted later\n")
      try write(a.path("old-name.txt"), "renamed later\n")
      try write(a.path("tool.sh"), "#!/bin/sh\necho tool\n")
      try write(a.path("clash.txt"), "base\n")
      try library.sync(a, b)
      // The conflict: B's edit first, then A's later one, which wins everywhere.
      try b.pause()
      try write(b.path("clash.txt"), "B's edit\n")
      usleep(300_000)
      try write(a.path("clash.txt"), "A's edit\n")
      try a.sync()

      let root = b.mountPoint
      let inotify = try watch(
        "inotifywait -m -r --format '%e %w%f' \(quote(root))", ready: "Watches established.")
      let fileMonitor = try watch("gio monitor \(quote(b.path("n.txt")))")
      let folderMonitor = try watch("gio monitor -d \(quote(root))")
      try b.resume()
      try b.sync()

      try write(a.path("n.txt"), "two\n")
      try write(a.path("new.txt"), "new\n")
      #expect(unlink(a.path("gone.txt")) == 0)
      #expect(rename(a.path("old-name.txt"), a.path("renamed.txt")) == 0)
      #expect(chmod(a.path("tool.sh"), 0o755) == 0)
      #expect(mkdir(a.path("folder"), 0o755) == 0)
      try write(a.path("folder/inner.txt"), "inside\n")
      try library.sync(a, b)

      expectLines(
        inotify,
        [
          "MODIFY \(root)/n.txt", "CLOSE_WRITE,CLOSE \(root)/n.txt", "CREATE \(root)/new.txt",
          "DELETE \(root)/gone.txt", "DELETE \(root)/old-name.txt",
          "CREATE \(root)/renamed.txt", "ATTRIB \(root)/tool.sh",
          "CREATE,ISDIR \(root)/folder", "CREATE \(root)/folder/inner.txt",
          "MODIFY \(root)/clash.txt",
        ])
      expectLines(fileMonitor, ["\(b.path("n.txt")): \(b.path("n.txt")): changed"])
      expectLines(
        folderMonitor,
        [
          "\(root): \(root)/n.txt: changed", "\(root): \(root)/new.txt: created",
          "\(root): \(root)/gone.txt: deleted", "\(root): \(root)/old-name.txt: deleted",
          "\(root): \(root)/renamed.txt: created",
          "\(root): \(root)/tool.sh: attributes changed", "\(root): \(root)/folder: created",
          "\(root): \(root)/clash.txt: changed",
        ])
      // B's edit became the conflict version: `.versions/clash.txt/` appeared with it.
      let conflict = try findVersions(b)
      #expect(conflict.count == 1 && conflict.first?.hasPrefix(".versions/clash.txt/") == true)
      expectLines(
        inotify,
        ["CREATE,ISDIR \(root)/.versions/clash.txt"] + conflict.map { "CREATE \(root)/\($0)" })
      // Only what changed: not the file that stayed, and no content event for a chmod.
      let heard = inotify.output
      #expect(!heard.contains("keep.txt"), "\(heard)")
      #expect(!heard.contains("MODIFY \(root)/tool.sh"), "\(heard)")
      // A resolves the conflict on A (keeps what is current), once it has B's version too:
      // the folder goes on B.
      try library.sync(a)
      _ = try check(["rm", "-r", a.path(".versions/clash.txt")])
      try library.sync(a, b)
      expectLines(inotify, ["DELETE,ISDIR \(root)/.versions/clash.txt"])
      for process in [inotify, fileMonitor, folderMonitor] { stop(process) }

      // The events made no version: nothing to upload, and both devices agree.
      try library.sync(b, a, b)
      #expect(try b.status().pendingUploads == 0)
      #expect(try read(b.path("n.txt")) == "two\n")
      #expect(try read(b.path("clash.txt")) == "A's edit\n")
      let binary = try MountFixture.docsyncBinary()
      for path in ["n.txt", "new.txt", "tool.sh", "folder/inner.txt", "renamed.txt"] {
        try expectMadeOnA(binary, b.path(path))
      }
      #expect(try findVersions(a).isEmpty && findVersions(b).isEmpty)
      try expectSameTree(a, b)
    }
  }

  @Test(
    "tail -f of a file on B prints the line A appends; a writer on B hears A's edit after its close",
    .needs("tail", "inotifywait"), .docsyncOnly)
  func openFilesHearChangesAsLocalOnesDo() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("log.txt"), "first line\n")
      try write(a.path("draft.txt"), "draft 1\n")
      try library.sync(a, b)

      let tail = try watch("tail -f \(quote(b.path("log.txt")))", ready: "first line")
      try write(a.path("log.txt"), "first line\nappended on A\n")
      try library.sync(a, b)
      expectLines(tail, ["first line", "appended on A"])
      stop(tail)

      // A writer keeps the file open on B: A's edit waits for its close, and so do the events.
      let writer = try BackgroundProcess(
        [
          "sh", "-c", "exec 3>>\"$1\"; echo open; read line; exec 3>&-; echo closed", "sh",
          b.path("draft.txt"),
        ])
      try writer.waitForOutput("open")
      let inotify = try watch(
        "inotifywait -m --format '%e %w%f' \(quote(b.mountPoint))", ready: "Watches established.")
      try write(a.path("draft.txt"), "draft 2 from A\n")
      try library.sync(a, b)
      usleep(500_000)
      #expect(!inotify.output.contains("MODIFY"), "\(inotify.output)")
      #expect(try read(b.path("draft.txt")) == "draft 1\n")
      try writer.send("close")
      try writer.waitForOutput("closed")
      try b.sync()
      expectLines(inotify, ["MODIFY \(b.mountPoint)/draft.txt"])
      #expect(try read(b.path("draft.txt")) == "draft 2 from A\n")
      stop(inotify)
      try library.sync(b, a)
      #expect(try findVersions(a).isEmpty && findVersions(b).isEmpty)
      try expectSameTree(a, b)
    }
  }

  @Test(
    "An inotifywait loop on B (as entr or a make watcher) reruns when A saves",
    .needs("inotifywait"), .docsyncOnly)
  func aWatcherLoopRerunsWhenTheOtherDeviceSaves() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("src.txt"), "version 1\n")
      try library.sync(a, b)
      // The loop of `make watch`: wait for a save, then build (here: print what was built).
      let loop = try BackgroundProcess([
        "sh", "-c",
        "echo watching; while inotifywait -q -q -e close_write,moved_to,create \"$1\"; do"
          + " echo \"built from $(cat \"$1\")\"; done", "sh", b.path("src.txt"),
      ])
      try loop.waitForOutput("watching")
      usleep(300_000)
      // An editor's atomic save on A (temp file renamed over), then an in-place one.
      try write(a.path(".src.txt.tmp"), "version 2\n")
      #expect(rename(a.path(".src.txt.tmp"), a.path("src.txt")) == 0)
      try library.sync(a, b)
      try loop.waitForOutput("built from version 2", timeout: .seconds(2))
      try write(a.path("src.txt"), "version 3\n")
      try library.sync(a, b)
      try loop.waitForOutput("built from version 3", timeout: .seconds(2))
      stop(loop)
      try library.sync(b, a)
      #expect(try b.status().pendingUploads == 0)
      #expect(try findVersions(a).isEmpty && findVersions(b).isEmpty)
    }
  }

  @Test(
    "A SIGKILL of B's daemon while it raises events leaves no version behind",
    .needs("inotifywait"), .docsyncOnly)
  func aCrashWhileRaisingEventsMakesNoVersion() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("seed.txt"), "seed\n")
      try library.sync(a, b)
      let inotify = try watch(
        "inotifywait -m -r --format '%e %w%f' \(quote(b.mountPoint))", ready: "Watches established."
      )
      for index in 0..<400 { try write(a.path("file-\(index).txt"), "file \(index)\n") }
      try a.sync()
      // B pulls and raises 400 creations; it dies once the first of them has been heard.
      let pull = try BackgroundProcess([try MountFixture.docsyncBinary(), "sync", b.mountPoint])
      let deadline = ContinuousClock.now + .seconds(30)
      while !inotify.output.contains("CREATE"), ContinuousClock.now < deadline { usleep(1_000) }
      #expect(inotify.output.contains("CREATE"), "\(inotify.output)")
      try b.crash()
      stop(inotify)
      _ = try? pull.wait()
      try b.mount()
      try library.sync(b, a, b)
      #expect(try b.status().pendingUploads == 0)
      #expect(try findVersions(a).isEmpty && findVersions(b).isEmpty)
      try expectSameTree(a, b)
      let binary = try MountFixture.docsyncBinary()
      for index in stride(from: 0, to: 400, by: 37) {
        try expectMadeOnA(binary, b.path("file-\(index).txt"))
      }
    }
  }
}
