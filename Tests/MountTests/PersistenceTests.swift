import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What the state folder must keep: across a clean unmount, and across a crash of the daemon
/// for whatever was fsynced. In plain mode the remount and the crash are no-ops, which proves
/// only the checks themselves.
@Suite("Persistence across remount and crash")
struct PersistenceTests {
  @Test(.needs())
  func filesModesMtimesSymlinksAndXattrsSurviveRemount() throws {
    try MountFixture.withMount { m throws in
      try makeRichTree(at: m.path("kept"))
      try makeManyFiles(at: m.path("kept/many"), count: 200)
      try setMtime(m.path("kept/many"), seconds: 1_700_000_000, nanoseconds: 987_654_321)
      let before = try snapshot(m.mountPoint)
      try m.remount()
      let after = try snapshot(m.mountPoint)
      let diff = differences(before, after)
      #expect(diff.isEmpty, "after remount:\n\(diff.prefix(20).joined(separator: "\n"))")
      // A second remount catches state that was only rebuilt in memory by the first.
      try m.remount()
      #expect(differences(before, try snapshot(m.mountPoint)).isEmpty)
    }
  }

  @Test(.needs("python3"))
  func fsyncedContentSurvivesKillDashNine() throws {
    try MountFixture.withMount(programs: ["python3"]) { m throws in
      // 24 MiB of varied bytes, then fsync: what was acknowledged as durable must all be there
      // after the daemon dies without a chance to flush. The first 8 MiB go in small writes,
      // the rest in 1 MiB writes, whose stream starts each 8 MiB window's writeback on the way.
      let script = """
        import hashlib, os, sys
        data = b"".join(hashlib.sha256(str(i).encode()).digest() * 1024 for i in range(768))
        fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        small = 8 << 20
        for offset in range(0, small, 100_000):
            os.write(fd, data[offset:min(offset + 100_000, small)])
        for offset in range(small, len(data), 1 << 20):
            os.write(fd, data[offset:offset + (1 << 20)])
        os.fsync(fd)
        os.close(fd)
        print(hashlib.sha256(data).hexdigest(), len(data))
        """
      try FileManager.default.createDirectory(
        atPath: m.path("durable"), withIntermediateDirectories: true)
      let written = try check(["python3", "-c", script, m.path("durable/data.bin")])
      try write(m.path("durable/small.txt"), "small\n")
      let small = try check(["python3", "-c", fsyncScript, m.path("durable/small.txt")])
      #expect(small.stdout == "ok\n")

      try m.crash()
      try m.mount()
      let read = try check(
        [
          "python3", "-c",
          "import hashlib,sys; d=open(sys.argv[1],'rb').read(); print(hashlib.sha256(d).hexdigest(), len(d))",
          m.path("durable/data.bin"),
        ])
      #expect(read.stdout == written.stdout, "fsynced file after kill -9 and remount")
      #expect(try String(contentsOfFile: m.path("durable/small.txt"), encoding: .utf8) == "small\n")
    }
  }

  /// Grouped commits (issue 17) must not cost consistency: kill -9 the daemon at random
  /// moments while a program creates, renames, chmods and deletes, and after each remount every
  /// name must be readable (no entry without its inode or working file) and every file that was
  /// fsynced, with its folder, before the kill must be there with its content.
  @Test(.needs("python3"))
  func killsDuringCreatesRenamesAndDeletesLeaveAConsistentTree() throws {
    try MountFixture.withMount(programs: ["python3"]) { m throws in
      var durable: [String: String] = [:]
      try FileManager.default.createDirectory(
        atPath: m.path("storm"), withIntermediateDirectories: true)
      for round in 0..<6 {
        let worker = try BackgroundProcess(
          ["python3", "-c", metadataStorm, m.path("storm"), String(round)])
        try worker.waitForOutput("started")
        usleep(UInt32.random(in: 100_000...900_000))
        try m.crash()
        for _ in 0..<500 where kill(worker.pid, 0) == 0 && !worker.output.contains("stopped") {
          usleep(10_000)
        }
        for line in worker.output.split(separator: "\n") where line.hasPrefix("durable ") {
          let fields = line.split(separator: " ", maxSplits: 2)
          durable[String(fields[1])] = String(fields[2]) + "\n"
        }
        #expect(worker.output.contains("durable "), "round \(round) made nothing durable")
        try m.mount()
        let walk = try run(["python3", "-c", walkScript, m.path("storm")])
        #expect(walk.status == 0, "round \(round): \(walk.stdout) \(walk.stderr)")
        for (path, content) in durable.sorted(by: { $0.key < $1.key }) {
          let found = try? String(contentsOfFile: m.path("storm/" + path), encoding: .utf8)
          #expect(found == content, "round \(round): \(path) was fsynced before the kill")
        }
      }
    }
  }

  /// Atomic saves (issue 17) take working files made ahead of time and let a save's fsync
  /// carry the state database's journal: kill -9 the daemon during saves, and after each
  /// remount the last save whose fsync returned must be there, as the document or (its rename
  /// was not yet committed) as the temporary file, and every name must be readable.
  @Test(.needs("python3"))
  func killsDuringAtomicSavesKeepTheLastFsyncedSave() throws {
    try MountFixture.withMount(programs: ["python3"]) { m throws in
      try FileManager.default.createDirectory(
        atPath: m.path("saves"), withIntermediateDirectories: true)
      for round in 0..<5 {
        let worker = try BackgroundProcess(
          ["python3", "-c", atomicSaves, m.path("saves"), String(round)])
        try worker.waitForOutput("started")
        usleep(UInt32.random(in: 100_000...700_000))
        try m.crash()
        for _ in 0..<500 where kill(worker.pid, 0) == 0 && !worker.output.contains("stopped") {
          usleep(10_000)
        }
        let saved = worker.output.split(separator: "\n").filter { $0.hasPrefix("fsynced ") }
        let last = try #require(saved.last, "round \(round) fsynced nothing").dropFirst(8)
        try m.mount()
        let walk = try run(["python3", "-c", walkScript, m.path("saves")])
        #expect(walk.status == 0, "round \(round): \(walk.stdout) \(walk.stderr)")
        let document = try? String(contentsOfFile: m.path("saves/document.txt"), encoding: .utf8)
        let temporary = try? String(
          contentsOfFile: m.path("saves/.document.txt.tmp"), encoding: .utf8)
        // The save after the last one reported may have finished its fsync and rename too.
        let next = "\(round) \(Int(last)! + 1)\n"
        let lastContent = "\(round) \(last)\n"
        #expect(
          document == lastContent || document == next || temporary == lastContent,
          "round \(round): save \(last) was fsynced; document \(document ?? "missing"), temp \(temporary ?? "missing")"
        )
      }
    }
  }

  private let atomicSaves = """
    import os, sys
    folder, r = sys.argv[1], sys.argv[2]
    document = os.path.join(folder, "document.txt")
    temporary = os.path.join(folder, ".document.txt.tmp")
    print("started", flush=True)
    i = 0
    try:
        while True:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, b"%s %d\\n" % (r.encode(), i))
            os.fsync(fd)
            os.close(fd)
            print("fsynced", i, flush=True)
            os.rename(temporary, document)
            i += 1
    except OSError as error:
        print("stopped", i, error, flush=True)
    """

  private let metadataStorm = """
    import os, sys
    root, r = sys.argv[1], sys.argv[2]
    base = os.path.join(root, "r" + r)
    os.mkdir(base)
    print("started", flush=True)
    def name(i):
        return os.path.join(base, "d%d" % (i % 8), "f%d" % i + (".renamed" if i % 3 == 0 else ""))
    i = 0
    try:
        while True:
            folder = os.path.join(base, "d%d" % (i % 8))
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "f%d" % i)
            with open(path, "w") as f:
                f.write("c%d\\n" % i)
            if i % 3 == 0:
                os.rename(path, path + ".renamed")
            if i % 5 == 0 and i >= 5:
                os.unlink(name(i - 5))
            if i % 7 == 0:
                os.chmod(folder, 0o750 if i % 2 else 0o755)
            if i % 25 == 0:
                kept = os.path.join(base, "kept%d" % i)
                fd = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.write(fd, b"kept %d\\n" % i)
                os.fsync(fd)
                os.close(fd)
                fd = os.open(base, os.O_RDONLY)
                os.fsync(fd)
                os.close(fd)
                print("durable r%s/kept%d kept %d" % (r, i, i), flush=True)
            i += 1
    except OSError as error:
        print("stopped", i, error, flush=True)
    """

  /// Walks a tree, reading every file and link: exits non-zero at the first name that fails.
  private let walkScript = """
    import os, sys
    count = 0
    for folder, folders, files in os.walk(sys.argv[1], onerror=lambda e: sys.exit("walk: %s" % e)):
        for entry in folders + files:
            path = os.path.join(folder, entry)
            info = os.lstat(path)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    f.read()
            count += 1
    print(count, "names read")
    """

  private let fsyncScript = """
    import os, sys
    fd = os.open(sys.argv[1], os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    print("ok")
    """
}
