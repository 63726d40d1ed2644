import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The mount's owner, an ordinary user as people are (Tools/test runs these tests so), resolves
/// conflicts with each command README promises, and the resolution reaches the other device;
/// nothing inside `.versions` can be written, made, renamed, chmodded or tagged.
///
/// Root would pass every one of these whatever the modes say: the kernel's checks under
/// `default_permissions` are what an ordinary user meets, so the tests insist on one.
@Suite("The mount's owner resolves conflicts with plain commands", .docsyncOnly)
struct ResolutionByTheOwnerTests {
  static let paths = ["notes/plan.md", "notes/todo.txt", "other.md"]

  /// One way to resolve, run in the laptop's mount, and what it resolves.
  struct Resolution: CustomTestStringConvertible, Sendable {
    var command: String
    /// The documents it resolves, and whether the laptop's version (the conflict version)
    /// becomes current rather than the desktop's edit staying so.
    var resolved: [String]
    var takesTheVersion: Bool

    var testDescription: String { command }
  }

  static let resolutions = [
    Resolution(
      command: #"cp ".versions/notes/plan.md/$1" notes/plan.md"#, resolved: ["notes/plan.md"],
      takesTheVersion: true),
    Resolution(
      command: #"mv ".versions/notes/plan.md/$1" notes/plan.md"#, resolved: ["notes/plan.md"],
      takesTheVersion: true),
    Resolution(
      command: #"rm ".versions/notes/plan.md/$1""#, resolved: ["notes/plan.md"],
      takesTheVersion: false),
    Resolution(
      command: "rm -r .versions/notes/plan.md", resolved: ["notes/plan.md"],
      takesTheVersion: false),
    Resolution(
      command: "rm -r .versions/notes", resolved: ["notes/plan.md", "notes/todo.txt"],
      takesTheVersion: false),
  ]

  @Test(
    "An ordinary user resolves by cp, mv, rm, rm -r of a document and of a folder; it syncs",
    .needs("sh", "cp", "mv", "rm"), .asOrdinaryUser, arguments: resolutions)
  func theOwnerResolves(_ resolution: Resolution) throws {
    try #require(!TestEnvironment.isRoot, "root skips the permission checks this is about")
    try Library.with(programs: ["sh", "cp", "mv", "rm"]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try makeConflicts(library, a, b, paths: Self.paths)
      #expect(try findVersions(a).count == Self.paths.count)
      let name = try #require(try versionNames(a, of: "notes/plan.md").first)

      // rm asks before removing a read-only file only when its input is a terminal; the
      // test's is not, as a script's is not.
      let result = try a.shell(resolution.command, name)
      #expect(result.status == 0 && result.stderr.isEmpty, "\(result)")
      try library.sync(a, b, a)

      for device in [a, b] {
        for path in Self.paths {
          let isResolved = resolution.resolved.contains(path)
          let current =
            isResolved && resolution.takesTheVersion ? edit(path, by: a) : edit(path, by: b)
          #expect(try read(device.path(path)) == current, "\(device.name) \(path)")
          let versions = try findVersions(device).filter { $0.hasPrefix(".versions/\(path)/") }
          #expect(versions.count == (isResolved ? 0 : 1), "\(device.name) \(path): \(versions)")
        }
        let open = Self.paths.filter { !resolution.resolved.contains($0) }
        #expect(
          try device.status().conflicts.map(\.path).sorted() == open, "\(device.name)")
      }
      #expect(try findVersions(a) == findVersions(b))
    }
  }

  /// `ls -l`, `rm -i` and file managers judge by the modes and by access(2): the owner may
  /// change the folders of `.versions` (remove from them), never the versions themselves.
  @Test("access(2) and the modes in .versions say what the owner may do", .asOrdinaryUser)
  func accessShowsWhatTheOwnerMayDo() throws {
    try #require(!TestEnvironment.isRoot, "root skips the permission checks this is about")
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try makeConflicts(library, a, b, paths: ["notes/plan.md"])
      let name = try #require(try versionNames(a, of: "notes/plan.md").first)
      let version = a.path(".versions/notes/plan.md/\(name)")
      for folder in [".versions", ".versions/notes", ".versions/notes/plan.md"] {
        var info = stat()
        #expect(stat(a.path(folder), &info) == 0)
        #expect(info.st_uid == getuid(), "\(folder) belongs to uid \(info.st_uid)")
        #expect(info.st_mode & 0o300 == 0o300, "\(folder) is \(String(info.st_mode, radix: 8))")
        #expect(access(a.path(folder), W_OK | X_OK) == 0, "\(folder): \(errnoText(errno))")
      }
      var info = stat()
      #expect(stat(version, &info) == 0)
      #expect(info.st_uid == getuid())
      #expect(info.st_mode & 0o222 == 0, "the version is \(String(info.st_mode, radix: 8))")
      #expect(access(version, R_OK) == 0, "\(errnoText(errno))")
      let writable = access(version, W_OK)
      let error = errno
      #expect(writable != 0 && [EROFS, EACCES].contains(error), "access W_OK: \(errnoText(error))")
    }
  }

  /// Each change a program might try inside `.versions`, and the errors that may refuse it.
  @Test(
    "Inside .versions, writes, creates, renames, chmod and setxattr are refused",
    .needs("sh", "touch", "truncate", "mkdir", "ln", "mv", "chmod", "setfattr"),
    .asOrdinaryUser)
  func nothingInsideVersionsChanges() throws {
    try #require(!TestEnvironment.isRoot, "root skips the permission checks this is about")
    let programs = ["sh", "touch", "truncate", "mkdir", "ln", "mv", "chmod", "setfattr"]
    try Library.with(programs: programs) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try makeConflicts(library, a, b, paths: Self.paths)
      let name = try #require(try versionNames(a, of: "notes/plan.md").first)
      let version = ".versions/notes/plan.md/\(name)"
      let folder = ".versions/notes/plan.md"
      let before = try snapshot(a.path(".versions"), excluding: [])
      let attempts: [(String, String)] = [
        ("write", #"echo x > "$1""#),
        ("append", #"echo x >> "$1""#),
        ("truncate", #"truncate -s 0 "$1""#),
        ("create beside", "touch .versions/notes/plan.md/new.md"),
        ("create at the top", "touch .versions/new.md"),
        ("mkdir", "mkdir .versions/notes/plan.md/folder"),
        ("symlink", "ln -s plan.md .versions/notes/plan.md/link"),
        ("hard link", #"ln "$1" .versions/notes/plan.md/hard"#),
        ("rename within its folder", #"mv -T "$1" .versions/notes/plan.md/renamed.md"#),
        ("rename into another document's folder", #"mv "$1" .versions/other.md/"#),
        ("rename a folder within", "mv -T .versions/notes .versions/moved"),
        ("move a document in", "mv -T other.md .versions/notes/plan.md/moved.md"),
        ("chmod of the version", #"chmod 0666 "$1""#),
        ("chmod of its folder", "chmod 0777 \(folder)"),
        ("setxattr", #"setfattr -n user.color -v blue "$1""#),
        ("setxattr on its folder", "setfattr -n user.color -v blue \(folder)"),
        ("replace docsync's xattr", #"setfattr -n user.docsync.device -v evil "$1""#),
        ("remove docsync's xattr", #"setfattr -x user.docsync.device "$1""#),
      ]
      for (label, script) in attempts {
        let result = try a.shell(script, version)
        #expect(result.status != 0, "\(label) was allowed: \(result)")
        // EROFS or EACCES, as DESIGN.md promises; mv may fall back to copying, which is refused
        // the same way.
        #expect(
          result.stderr.contains("Read-only file system")
            || result.stderr.contains("Permission denied"), "\(label): \(result)")
      }
      #expect(
        differences(before, try snapshot(a.path(".versions"), excluding: [])).isEmpty,
        "the refused changes left .versions as it was")
      #expect(try read(a.path(version)) == edit("notes/plan.md", by: a))
      #expect(try read(a.path("other.md")) == edit("other.md", by: b))
      try library.sync(a, b, a)
      #expect(try findVersions(b) == findVersions(a))
      #expect(try b.status().conflicts.count == Self.paths.count)
    }
  }
}
