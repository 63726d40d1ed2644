import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Concurrent edits become conflict versions under `.versions/`, the same on every device, and
/// plain `cp`, `mv`, `cat` and `rm` resolve them everywhere (DESIGN.md §1 and §2).
@Suite("Conflicts and their resolution")
struct ConflictTests {
  @Test(
    "Concurrent edits on A and B: B's later edit is current on both, A's is the one version",
    .needs(), .docsyncOnly)
  func concurrentEditsShowTheSameWinnerAndVersionOnBothDevices() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try makeConflicts(library, a, b, paths: ["notes/plan.md"])

      #expect(try read(a.path("notes/plan.md")) == edit("notes/plan.md", by: b))
      #expect(try read(b.path("notes/plan.md")) == edit("notes/plan.md", by: b))
      let namesA = try versionNames(a, of: "notes/plan.md")
      let namesB = try versionNames(b, of: "notes/plan.md")
      #expect(namesA.count == 1)
      #expect(namesA == namesB)
      #expect(try findVersions(a) == findVersions(b))
      let name = try #require(namesA.first)
      #expect(isVersionName(name, device: "laptop", extension: ".md"), "\(name)")
      for device in [a, b] {
        let version = device.path(".versions/notes/plan.md/\(name)")
        #expect(try read(version) == edit("notes/plan.md", by: a))
        #expect(try getUserXattr(version, "user.docsync.device") == Array("laptop".utf8))
        #expect(try !getUserXattr(version, "user.docsync.version").isEmpty)
        #expect(try !getUserXattr(version, "user.docsync.mtime").isEmpty)
        let conflicts = try device.status().conflicts
        #expect(conflicts.map(\.versions) == [1], "\(device.name): \(conflicts)")
        #expect(conflicts.allSatisfy { $0.path.hasSuffix("notes/plan.md") }, "\(conflicts)")
      }
      // The name carries the version's time, and the file's mtime is that same time.
      let mtimeA = try describe(a.path(".versions/notes/plan.md/\(name)")).mtimeNanoseconds
      let mtimeB = try describe(b.path(".versions/notes/plan.md/\(name)")).mtimeNanoseconds
      #expect(mtimeA == mtimeB)
      #expect(mtimeA % 1_000_000 == 0)
    }
  }

  @Test(
    "Choosing the version on B resolves the conflict on both devices",
    .needs(), .docsyncOnly, arguments: ["cp", "mv", "cat"])
  func choosingTheVersionResolvesEverywhere(_ how: String) throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try makeConflicts(library, a, b, paths: ["plan.md"])
      let name = try #require(try versionNames(b, of: "plan.md").first)
      let version = ".versions/plan.md/\(name)"
      switch how {
      case "cp": try check(["cp", version, "plan.md"], cwd: b.mountPoint)
      case "mv": try check(["mv", version, "plan.md"], cwd: b.mountPoint)
      default:
        try check(["sh", "-c", #"cat "$1" > "$2""#, "sh", version, "plan.md"], cwd: b.mountPoint)
      }
      #expect(try read(b.path("plan.md")) == edit("plan.md", by: a))
      try library.sync(b, a, b)
      for device in [a, b] {
        #expect(try read(device.path("plan.md")) == edit("plan.md", by: a), "\(device.name)")
        #expect(try findVersions(device).isEmpty, "\(device.name)")
        #expect(try device.status().conflicts.isEmpty, "\(device.name)")
      }
    }
  }

  @Test(
    "rm of the version on A discards it: B keeps its content and .versions empties",
    .needs(), .docsyncOnly)
  func removingTheVersionKeepsWhatIsCurrent() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try makeConflicts(library, a, b, paths: ["plan.md"])
      let name = try #require(try versionNames(a, of: "plan.md").first)
      try check(["rm", ".versions/plan.md/\(name)"], cwd: a.mountPoint)
      try library.sync(a, b, a)
      for device in [a, b] {
        #expect(try read(device.path("plan.md")) == edit("plan.md", by: b), "\(device.name)")
        #expect(try findVersions(device).isEmpty, "\(device.name)")
        #expect(try device.status().conflicts.isEmpty, "\(device.name)")
      }
    }
  }

  @Test(
    "rm -r .versions/<folder> keeps what is current for every document under that folder only",
    .needs(), .docsyncOnly)
  func removingAFolderOfVersionsResolvesEveryConflictUnderIt() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      let paths = ["reports/one.md", "reports/two.txt", "elsewhere.md"]
      try makeConflicts(library, a, b, paths: paths)
      #expect(try findVersions(a).count == 3)
      try check(["rm", "-r", ".versions/reports"], cwd: a.mountPoint)
      try library.sync(a, b, a)
      for device in [a, b] {
        for path in paths {
          #expect(try read(device.path(path)) == edit(path, by: b), "\(device.name) \(path)")
        }
        let left = try findVersions(device)
        #expect(left.count == 1 && left.allSatisfy { $0.hasPrefix(".versions/elsewhere.md/") })
        #expect(try device.status().conflicts.map(\.path) == ["elsewhere.md"], "\(device.name)")
      }
    }
  }

  @Test(
    "Three devices, two paused, edit one document: two versions, and one cp resolves both",
    .needs(), .docsyncOnly)
  func threeDevicesTwoVersionsOneChoice() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      let c = try library.device("tablet")
      try write(a.path("plan.md"), base("plan.md"))
      try library.sync(a, b, c)
      try b.pause()
      try c.pause()
      try write(a.path("plan.md"), edit("plan.md", by: a))
      try a.sync()
      // The later edit wins: apart by more than a busy machine's scheduling (20 ms let the
      // desktop's win now and then under a load of 40).
      usleep(500_000)
      try write(b.path("plan.md"), edit("plan.md", by: b))
      usleep(500_000)
      try write(c.path("plan.md"), edit("plan.md", by: c))
      try b.resume()
      try c.resume()
      try library.sync(a, b, c, a, b)

      let names = try versionNames(a, of: "plan.md")
      #expect(names.count == 2, "\(names)")
      for device in [a, b, c] {
        #expect(try read(device.path("plan.md")) == edit("plan.md", by: c), "\(device.name)")
        #expect(try versionNames(device, of: "plan.md") == names, "\(device.name)")
        #expect(try device.status().conflicts.map(\.versions) == [2], "\(device.name)")
      }
      let fromB = try #require(
        names.first { isVersionName($0, device: "desktop", extension: ".md") })
      #expect(names.contains { isVersionName($0, device: "laptop", extension: ".md") })

      try check(["cp", ".versions/plan.md/\(fromB)", "plan.md"], cwd: a.mountPoint)
      try library.sync(a, b, c, a)
      for device in [a, b, c] {
        #expect(try read(device.path("plan.md")) == edit("plan.md", by: b), "\(device.name)")
        #expect(try findVersions(device).isEmpty, "\(device.name)")
        #expect(try device.status().conflicts.isEmpty, "\(device.name)")
      }
    }
  }

  @Test(
    "A delete on A concurrent with an edit on B: the edit comes back on both",
    .needs(), .docsyncOnly)
  func deleteNeverBeatsAConcurrentEdit() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("notes/plan.md"), base("notes/plan.md"))
      try write(a.path("notes/other.md"), "untouched\n")
      try library.sync(a, b)
      try b.pause()
      try FileManager.default.removeItem(atPath: a.path("notes/plan.md"))
      try a.sync()
      try write(b.path("notes/plan.md"), edit("notes/plan.md", by: b))
      try b.resume()
      try library.sync(b, a, b)
      for device in [a, b] {
        #expect(
          try read(device.path("notes/plan.md")) == edit("notes/plan.md", by: b), "\(device.name)")
        #expect(try read(device.path("notes/other.md")) == "untouched\n", "\(device.name)")
      }
      #expect(try findVersions(a) == findVersions(b))
      // Modification times are the propagation tests' concern, and fail there for their reason.
      try expectSameTree(b, a, mtimes: false)
    }
  }

  @Test(
    ".versions refuses writes and creates, and cp, diff and grep -r read it",
    .needs("diff", "grep"), .docsyncOnly)
  func versionsAreReadOnlyButReadable() throws {
    try Library.with(programs: ["diff", "grep"]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try makeConflicts(library, a, b, paths: ["plan.md"])
      let name = try #require(try versionNames(a, of: "plan.md").first)
      let version = ".versions/plan.md/\(name)"

      let overwrite = try run(["sh", "-c", #"echo x > "$1""#, "sh", version], cwd: a.mountPoint)
      #expect(overwrite.status != 0)
      #expect(
        overwrite.stderr.contains("Read-only file system")
          || overwrite.stderr.contains("Permission denied"), "\(overwrite)")
      let descriptor = open(a.path(version), O_WRONLY)
      let openError = errno
      if descriptor >= 0 { close(descriptor) }
      #expect(
        descriptor < 0 && [EROFS, EACCES].contains(openError), "open: \(errnoText(openError))")
      #expect(try run(["touch", ".versions/new"], cwd: a.mountPoint).status != 0)
      #expect(try run(["touch", ".versions/plan.md/new"], cwd: a.mountPoint).status != 0)
      #expect(try run(["mkdir", ".versions/folder"], cwd: a.mountPoint).status != 0)
      #expect(
        try read(a.path(version)) == edit("plan.md", by: a), "the refused writes left it intact")

      let copy = "\(library.base)/copied.md"
      try check(["cp", version, copy], cwd: a.mountPoint)
      #expect(try read(copy) == edit("plan.md", by: a))
      let diff = try run(["diff", "plan.md", version], cwd: a.mountPoint)
      #expect(diff.status == 1, "\(diff)")
      #expect(diff.stdout.contains("< \(edit("plan.md", by: b))"), "\(diff)")
      #expect(diff.stdout.contains("> \(edit("plan.md", by: a))"), "\(diff)")
      let grep = try check(["grep", "-r", "laptop's edit", ".versions"], cwd: a.mountPoint)
      #expect(grep.stdout.contains(version), "\(grep)")
      #expect(try findVersions(a) == [version])
    }
  }
}
