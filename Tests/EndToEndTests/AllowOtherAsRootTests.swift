import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A library of an ordinary user (`docsync-user`) mounted with `--allow-other`, reached by a
/// second ordinary user (`docsync-other`): what they may read and change follows the modes the
/// mount shows, as on any disk, and they resolve none of the owner's conflicts unless the modes
/// let them. The test itself runs as root only to act as both users (through `runuser`); root
/// never touches the mounts' files.
@Suite("--allow-other: another user meets the owner's modes", .docsyncOnly, .asRoot)
struct AllowOtherAsRootTests {
  static let programs = ["runuser", "sh", "cat", "cp", "mv", "rm"]

  /// What the owner makes on the laptop: (path, mode) for files, in folders of their own modes.
  static let script = """
    set -e
    umask 022
    printf 'base of public.md\\n' > public.md; chmod 0644 public.md
    printf 'base of private.md\\n' > private.md; chmod 0600 private.md
    mkdir secret; chmod 0700 secret; printf 'base of secret/inside.md\\n' > secret/inside.md
    mkdir open; chmod 0777 open
    printf 'base of open/shared.md\\n' > open/shared.md; chmod 0666 open/shared.md
    """
  static let conflicted = ["public.md", "private.md", "secret/inside.md", "open/shared.md"]

  @Test(.needs("runuser", "sh", "cat", "cp", "mv", "rm"))
  func anotherUserDoesWhatTheModesAllowAndNothingMore() throws {
    try #require(TestEnvironment.isRoot, "acting as two other users needs root")
    let owner = TestEnvironment.testUser
    let other = TestEnvironment.otherUser
    try Library.with(programs: Self.programs, hub: .sqlite, user: owner) { library in
      let a = try library.device("laptop", options: ["--allow-other"])
      // A private library on the desktop: what arrives there gets the mount's umask.
      let b = try library.device("desktop", options: ["--allow-other"], umask: 0o077)
      try expectSuccess(a.shell(Self.script))
      try library.sync(a, b)
      try b.pause()
      for path in Self.conflicted {
        try expectSuccess(a.shell(#"printf '%s\n' "$2" > "$1""#, path, "laptop's edit of \(path)"))
      }
      try a.sync()
      usleep(20_000)
      for path in Self.conflicted {
        try expectSuccess(
          b.shell(#"printf '%s\n' "$2" > "$1""#, path, "desktop's edit of \(path)"))
      }
      try b.resume()
      try library.sync(a, b, a)
      #expect(try a.status().conflicts.count == Self.conflicted.count)

      // The hub docsync made, and the folder it made for it, are the owner's alone.
      let hubFolder = (library.hub as NSString).deletingLastPathComponent
      for path in [hubFolder, library.hub] {
        let bits = try mode(of: path)
        #expect(bits & 0o077 == 0, "\(path) is \(String(bits, radix: 8))")
      }
      let hubRead = try asOther(["cat", library.hub])
      #expect(hubRead.status != 0, "\(other) read the hub: \(hubRead)")

      // Everything that arrived on the desktop was made under umask 077.
      for (path, entry) in try snapshot(b.mountPoint, options: .init(xattrs: false))
      where entry.kind != .symlink {
        let bits = try mode(of: b.path(path))
        #expect(bits & 0o077 == 0, "desktop's \(path) is \(String(bits, radix: 8))")
        let look = try asOther(["cat", b.path(path)])
        #expect(look.status != 0, "\(other) read desktop's \(path): \(look)")
      }

      // On the laptop: reading each document and each conflict version succeeds for the other
      // user exactly when the modes shown say so; so does resolving, by whichever of rm, mv,
      // cp and rm -r they try first that the modes allow.
      // The owner opens one document to everyone, so the modes let the other user resolve its
      // conflict by writing a version over it.
      try expectSuccess(a.shell("chmod 0777 open && chmod 0666 open/shared.md"))
      let root = a.mountPoint
      var resolved: [String] = []
      for path in Self.conflicted {
        let document = a.path(path)
        let reading = try asOther(["cat", document])
        #expect(
          (reading.status == 0) == (try mayOther(.read, document, under: root)),
          "\(path): \(reading)")
        let folder = a.path(".versions/\(path)")
        let names = try runAs(owner, ["ls", folder]).stdout.split(separator: "\n")
          .filter { !isViewName(String($0)) }
        #expect(names.count == 1, "\(path): \(names)")
        guard let name = names.first.map(String.init) else { continue }
        let version = "\(folder)/\(name)"
        let readingVersion = try asOther(["cat", version])
        #expect(
          (readingVersion.status == 0) == (try mayOther(.read, version, under: root)),
          "\(path)'s version: \(readingVersion)")
        // `.versions` shows no one what the document's own modes keep from them.
        #expect(
          readingVersion.status != 0 || reading.status == 0,
          "\(other) reads a version of \(path), which they cannot read")

        let mayRemove = try mayOther(.write, folder, under: root)
        let documentFolder = (document as NSString).deletingLastPathComponent
        let attempts: [(String, [String], Bool)] = [
          ("rm", ["rm", version], mayRemove),
          (
            "mv", ["mv", "-f", version, document],
            try mayRemove && mayOther(.write, documentFolder, under: root)
          ),
          (
            "cp", ["cp", version, document],
            try mayOther(.read, version, under: root) && mayOther(.write, document, under: root)
          ),
          ("rm -r", ["rm", "-r", folder], mayRemove),
        ]
        for (label, argv, allowed) in attempts {
          let result = try asOther(argv)
          #expect((result.status == 0) == allowed, "\(label) for \(path): \(result)")
          if result.status == 0 {
            resolved.append(path)
            break
          }
        }
      }
      #expect(resolved.contains("open/shared.md"), "the modes let \(other) write open/shared.md")
      let intrusion = try asOther(["touch", a.path("intruder.md")])
      #expect(
        (intrusion.status == 0) == (try mayOther(.write, root, under: root)), "\(intrusion)")

      // What the other user could not do left those conflicts open on both devices.
      try library.sync(a, b, a)
      let open = Self.conflicted.filter { !resolved.contains($0) }.sorted()
      #expect(try a.status().conflicts.map(\.path).sorted() == open)
      #expect(try b.status().conflicts.map(\.path).sorted() == open)
      #expect(try asOther(["cat", library.hub]).status != 0)
    }
  }

  /// A write by another user clears the owner's setuid and setgid bits, as on a local disk:
  /// docsync clears them itself (FUSE_HANDLE_KILLPRIV_V2), and the owner's `stat` shows it.
  @Test(.needs("runuser", "sh", "stat"))
  func anotherUsersWriteClearsSetuidAndSetgid() throws {
    try #require(TestEnvironment.isRoot, "acting as two other users needs root")
    let owner = TestEnvironment.testUser
    try Library.with(programs: ["runuser", "sh", "stat"], hub: .sqlite, user: owner) {
      library in
      let a = try library.device("laptop", options: ["--allow-other"])
      try expectSuccess(
        a.shell("mkdir open && chmod 0777 open && echo x > open/tool && chmod 06777 open/tool"))
      let tool = a.path("open/tool")
      #expect(try mode(of: tool) == 0o6777)
      try expectSuccess(asOther(["sh", "-c", #"echo y >> "$1""#, "sh", tool]))
      let shown = try runAs(owner, ["stat", "-c", "%a", tool])
      #expect(shown.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "777", "\(shown)")
      #expect(try mode(of: tool) == 0o777)
      #expect(try runAs(owner, ["cat", tool]).stdout == "x\ny\n")
    }
  }

  /// pjdfstest chmod/12.t on an ordinary user's mount (no passthrough): the other user's
  /// `open O_WRONLY : write : fstat` and the owner's `stat` both show the bits cleared, for
  /// setuid, setgid and both; setgid without group execute stays; a truncate clears too.
  @Test(.needs("runuser", "perl", "stat"))
  func chmod12StyleChecksPassForAnotherUsersWrite() throws {
    try #require(TestEnvironment.isRoot, "acting as two other users needs root")
    let owner = TestEnvironment.testUser
    let writeThenFstat = """
      use Fcntl;
      sysopen(my $f, $ARGV[0], $ARGV[1] eq "trunc" ? O_WRONLY | O_TRUNC : O_WRONLY) or die "$!";
      $ARGV[1] eq "trunc" or syswrite($f, "x") == 1 or die "write: $!";
      my @s = stat($f);
      printf "%o\n", $s[2] & 07777;
      """
    try Library.with(programs: ["runuser", "sh", "stat", "perl"], hub: .sqlite, user: owner) {
      library in
      let a = try library.device("laptop", options: ["--allow-other"])
      try expectSuccess(a.shell("mkdir open && chmod 0777 open"))
      let cases: [(String, String)] = [
        ("4777", "777"), ("2777", "777"), ("6777", "777"), ("2767", "2767"), ("6767", "2767"),
      ]
      for how in ["write", "trunc"] {
        for (before, after) in cases {
          let name = "open/\(how)-\(before)"
          try expectSuccess(a.shell("echo x > \(name) && chmod \(before) \(name)"))
          let file = a.path(name)
          let fstat = try asOther(["perl", "-e", writeThenFstat, file, how])
          #expect(fstat.status == 0, "\(fstat)")
          #expect(
            fstat.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == after,
            "\(how) of \(before): fstat shows \(fstat.stdout)")
          let shown = try runAs(owner, ["stat", "-c", "%a", file])
          #expect(
            shown.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == after,
            "\(how) of \(before): the owner's stat shows \(shown.stdout)")
        }
      }
    }
  }

  enum Access { case read, write }

  /// Whether the kernel's mode checks let a user who is neither the owner nor in the group
  /// `access` the path: the `other` bits of the path and search on every folder above it up to
  /// `root`, as root sees them (root may look: the mounts allow others). A folder's write
  /// needs search too, and a sticky folder keeps others from removing what they do not own.
  func mayOther(_ access: Access, _ path: String, under root: String) throws -> Bool {
    var folder = (path as NSString).deletingLastPathComponent
    while folder.hasPrefix(root) {
      guard try mode(of: folder) & 0o001 != 0 else { return false }
      if folder == root { break }
      folder = (folder as NSString).deletingLastPathComponent
    }
    let bits = try mode(of: path)
    switch access {
    case .read: return bits & 0o004 != 0
    case .write:
      let isFolder = try describe(path).kind == .directory
      return bits & 0o002 != 0 && (!isFolder || (bits & 0o001 != 0 && bits & 0o1000 == 0))
    }
  }

  func mode(of path: String) throws -> mode_t {
    var status = stat()
    guard lstat(path, &status) == 0 else {
      throw TestFailure("lstat \(path): \(errnoText(errno))")
    }
    return status.st_mode & 0o7777
  }

  func runAs(_ user: String, _ argv: [String]) throws -> RunResult {
    try run(["runuser", "-u", user, "--"] + argv, cwd: "/")
  }

  func asOther(_ argv: [String]) throws -> RunResult {
    try runAs(TestEnvironment.otherUser, argv)
  }

  func expectSuccess(_ result: RunResult) throws {
    guard result.status == 0 else { throw TestFailure("\(result)") }
  }
}
