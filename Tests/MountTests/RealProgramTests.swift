import Foundation
import MountHarness
import Testing

/// Everyday programs doing their usual work inside the mount, checked against what the same
/// work leaves on a local disk.
@Suite("Real programs in the mount")
struct RealProgramTests {
  @Test(.needs("cp"))
  func cpArchivePreservesModesMtimesSymlinksAndXattrs() throws {
    try MountFixture.withMount(programs: ["cp"]) { m throws in
      let source = m.scratch("source")
      try makeRichTree(at: source)
      try check(["cp", "-a", source, m.path("copy")])
      let diff = differences(try snapshot(source), try snapshot(m.path("copy")))
      #expect(diff.isEmpty, "cp -a into the mount:\n\(diff.joined(separator: "\n"))")

      try check(["cp", "-a", m.path("copy"), m.scratch("back")])
      let back = differences(try snapshot(source), try snapshot(m.scratch("back")))
      #expect(back.isEmpty, "cp -a out of the mount:\n\(back.joined(separator: "\n"))")
    }
  }

  @Test(.needs("mv"))
  func mvRenamesFilesAndFolders() throws {
    try MountFixture.withMount(programs: ["mv"]) { m throws in
      try write(m.path("work/a.txt"), "alpha\n")
      try write(m.path("work/folder/inner/b.txt"), "beta\n")
      try check(["mv", m.path("work/a.txt"), m.path("work/renamed.txt")])
      try check(["mv", m.path("work/folder"), m.path("work/moved")])
      #expect(try read(m.path("work/renamed.txt")) == "alpha\n")
      #expect(try read(m.path("work/moved/inner/b.txt")) == "beta\n")
      #expect(
        try FileManager.default.contentsOfDirectory(atPath: m.path("work")).sorted() == [
          "moved", "renamed.txt",
        ])

      // Over an existing file, and in from another file system (a copy, not a rename).
      try write(m.path("work/target.txt"), "old\n")
      try check(["mv", m.path("work/renamed.txt"), m.path("work/target.txt")])
      #expect(try read(m.path("work/target.txt")) == "alpha\n")
      try write(m.scratch("outside.txt"), "from outside\n")
      try check(["mv", m.scratch("outside.txt"), m.path("work/moved/outside.txt")])
      #expect(try read(m.path("work/moved/outside.txt")) == "from outside\n")
      #expect(!FileManager.default.fileExists(atPath: m.path("work/renamed.txt")))
    }
  }

  @Test(.needs("rm"))
  func rmRecursiveRemovesATree() throws {
    try MountFixture.withMount(programs: ["rm"]) { m throws in
      try makeRichTree(at: m.path("doomed/tree"))
      try makeManyFiles(at: m.path("doomed/many"), count: 300)
      try write(m.path("kept.txt"), "kept\n")
      try check(["rm", "-r", m.path("doomed")])
      #expect(!FileManager.default.fileExists(atPath: m.path("doomed")))
      #expect(try snapshot(m.mountPoint).keys.sorted() == ["kept.txt"])
    }
  }

  @Test(.needs("sed"))
  func sedInPlaceLeavesNoTempFile() throws {
    try MountFixture.withMount(programs: ["sed"]) { m throws in
      try write(m.path("edit/plan.md"), "one\ntwo\nthree\n")
      try check(["sed", "-i", "s/two/TWO/", "plan.md"], cwd: m.path("edit"))
      #expect(try read(m.path("edit/plan.md")) == "one\nTWO\nthree\n")
      #expect(try FileManager.default.contentsOfDirectory(atPath: m.path("edit")) == ["plan.md"])
    }
  }

  @Test(.needs("vim"))
  func vimSaveWithDefaultsLeavesNoBackupProbeOrSwap() throws {
    try MountFixture.withMount(programs: ["vim"]) { m throws in
      try write(m.path("edit/notes.txt"), "first line\nsecond line\n")
      // -u DEFAULTS is vim's real default configuration (nocompatible, backup on write);
      // plain -Es would run in vi-compatible mode and save differently.
      let home = m.scratch("home")
      try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
      try check(
        [
          "vim", "-Es", "-N", "-u", "DEFAULTS", "-c", "%s/second/2nd/", "-c", "$put ='third line'",
          "-c", "wq", "notes.txt",
        ], cwd: m.path("edit"), env: ["HOME": home], timeout: .seconds(60))
      #expect(try read(m.path("edit/notes.txt")) == "first line\n2nd line\nthird line\n")
      let left = try FileManager.default.contentsOfDirectory(atPath: m.path("edit")).sorted()
      #expect(left == ["notes.txt"], "vim left \(left) (backup notes.txt~, probe 4913, swap?)")
    }
  }

  @Test(.needs("python3"))
  func pythonAtomicSaveWithReplace() throws {
    try MountFixture.withMount(programs: ["python3"]) { m throws in
      try write(m.path("save/doc.json"), "{\"v\": 1}\n")
      let script = """
        import os, sys
        folder, target = sys.argv[1], os.path.join(sys.argv[1], "doc.json")
        temp = os.path.join(folder, ".doc.json.tmp")
        with open(temp, "w") as f:
            f.write('{"v": 2}\\n')
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, target)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(fd)
        os.close(fd)
        """
      try check(["python3", "-c", script, m.path("save")])
      #expect(try read(m.path("save/doc.json")) == "{\"v\": 2}\n")
      #expect(try FileManager.default.contentsOfDirectory(atPath: m.path("save")) == ["doc.json"])
    }
  }

  @Test(.needs("tar", "diff"))
  func tarExtractAndCreateThousandsOfFiles() throws {
    try MountFixture.withMount(programs: ["tar", "diff"]) { m throws in
      let source = m.scratch("source")
      try makeManyFiles(at: source, count: 3_000)
      try makeRichTree(at: "\(source)/rich")
      try check(["tar", "-C", source, "--xattrs", "-cf", m.scratch("source.tar"), "."])

      try FileManager.default.createDirectory(
        atPath: m.path("x"), withIntermediateDirectories: true)
      try check(
        ["tar", "-C", m.path("x"), "--xattrs", "-xf", m.scratch("source.tar")],
        timeout: .seconds(600))
      try check(["diff", "-r", "--no-dereference", source, m.path("x")], timeout: .seconds(600))
      let extracted = differences(try snapshot(source), try snapshot(m.path("x")))
      #expect(
        extracted.isEmpty, "tar x into the mount:\n\(extracted.prefix(20).joined(separator: "\n"))")

      // tar c reading from the mount, writing its archive into the mount.
      try check(
        ["tar", "-C", m.path("x"), "--xattrs", "-cf", m.path("out.tar"), "."],
        timeout: .seconds(600))
      try FileManager.default.createDirectory(
        atPath: m.scratch("back"), withIntermediateDirectories: true)
      try check(["tar", "-C", m.scratch("back"), "--xattrs", "-xf", m.path("out.tar")])
      let roundTrip = differences(try snapshot(source), try snapshot(m.scratch("back")))
      #expect(
        roundTrip.isEmpty, "tar c from the mount:\n\(roundTrip.prefix(20).joined(separator: "\n"))")
    }
  }

  @Test(.needs("rsync"))
  func rsyncInAndOutThenNothingToDo() throws {
    try MountFixture.withMount(programs: ["rsync"]) { m throws in
      let source = m.scratch("source")
      try makeRichTree(at: "\(source)/rich")
      try makeManyFiles(at: "\(source)/many", count: 500)
      // Debian 12's rsync 3.5.0+ds1-0+deb12u1 with its default incremental recursion leaves
      // folder mtimes unset even on ext4 (with --no-inc-recursive it sets them), and its second
      // run does not itemize them; -a without -X does not copy xattrs.
      let options = TreeSnapshotOptions(directoryMtimes: false, xattrs: false)

      try check(["rsync", "-a", "\(source)/", m.path("r/")], timeout: .seconds(300))
      let into = differences(
        try snapshot(source, options: options), try snapshot(m.path("r"), options: options))
      #expect(into.isEmpty, "rsync -a into the mount:\n\(into.prefix(20).joined(separator: "\n"))")
      let again = try check(["rsync", "-a", "--itemize-changes", "\(source)/", m.path("r/")])
      #expect(again.stdout.isEmpty, "second rsync into the mount had work:\n\(again.stdout)")

      try check(["rsync", "-a", m.path("r/"), m.scratch("back/")], timeout: .seconds(300))
      let out = differences(
        try snapshot(source, options: options), try snapshot(m.scratch("back"), options: options))
      #expect(out.isEmpty, "rsync -a out of the mount:\n\(out.prefix(20).joined(separator: "\n"))")
      let outAgain = try check([
        "rsync", "-a", "--itemize-changes", m.path("r/"), m.scratch("back/"),
      ])
      #expect(
        outAgain.stdout.isEmpty, "second rsync out of the mount had work:\n\(outAgain.stdout)")
    }
  }

  @Test(.needs("git"))
  func gitStatusStaysCleanAcrossRemount() throws {
    try MountFixture.withMount(programs: ["git"]) { m throws in
      let home = m.scratch("home")
      try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
      let env = [
        "HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid", "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
      ]
      let repo = m.path("repo")
      try makeRichTree(at: "\(repo)/tree")
      try makeManyFiles(at: "\(repo)/many", count: 200)
      try check(["git", "init", "-q", "-b", "main"], cwd: repo, env: env)
      try check(["git", "add", "-A"], cwd: repo, env: env)
      try check(["git", "commit", "-q", "-m", "first"], cwd: repo, env: env)

      // status refreshes the index; diff-files does not, so it reports any entry whose inode,
      // ctime, mtime or size moved since: the stat data git trusts instead of rereading files.
      func expectClean(_ when: String) throws {
        for round in 1...2 {
          let status = try check(["git", "status", "--porcelain"], cwd: repo, env: env)
          #expect(status.stdout.isEmpty, "git status \(when), round \(round):\n\(status.stdout)")
          let stat = try check(["git", "diff-files", "--name-only"], cwd: repo, env: env)
          #expect(stat.stdout.isEmpty, "stat data moved \(when), round \(round):\n\(stat.stdout)")
        }
      }
      try expectClean("after commit")
      try m.remount()
      try expectClean("after remount")
    }
  }

  @Test(.needs("find", "du"))
  func findAndDuAgreeWithAPlainCopy() throws {
    try MountFixture.withMount(programs: ["find", "du", "cp"]) { m throws in
      let plain = m.scratch("plain")
      try makeRichTree(at: "\(plain)/rich")
      try makeManyFiles(at: "\(plain)/many", count: 400)
      try check(["cp", "-a", "\(plain)/.", m.path("copy")])

      // Folder sizes are the file system's own business (4096 on ext4), so they are left out.
      let queries: [[String]] = [
        ["find", ".", "-printf", "%y %m %P %l\n"],
        ["find", ".", "!", "-type", "d", "-printf", "%y %s %T@ %P\n"],
        ["find", ".", "-name", "*.txt", "-size", "+1k"],
        ["find", ".", "-type", "l", "-xtype", "l"],
        ["find", ".", "-newermt", "2020-11-01", "-type", "f"],
        ["find", ".", "-perm", "-u+x", "-type", "f"],
        ["find", ".", "-empty"],
        // du of folders would add their sizes too; per file, apparent size and blocks.
        ["sh", "-c", "find . -type f -print0 | du -b --files0-from=-"],
        ["sh", "-c", "find . -type f -print0 | du -k --files0-from=-"],
        ["du", "-s", "--inodes", "."],
      ]
      for query in queries {
        let expected = try check(query, cwd: plain)
        let actual = try check(query, cwd: m.path("copy"))
        let sorted = { (text: String) in text.split(separator: "\n").sorted() }
        #expect(sorted(actual.stdout) == sorted(expected.stdout), "\(query.joined(separator: " "))")
      }
    }
  }
}
