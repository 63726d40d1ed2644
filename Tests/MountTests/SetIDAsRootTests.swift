import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// pjdfstest chmod/12.t on root's mount, where the kernel reads and writes working files itself
/// (FUSE passthrough): another user's write clears setuid, and setgid where the group may
/// execute, both in the writer's `fstat` and in everyone's `stat`; so does their truncate;
/// root's own write (CAP_FSETID) keeps them. Issue 45: passthrough kept 04777 after the write.
@Suite("Set-ID bits with passthrough, as root", .docsyncOnly, .asRoot)
struct SetIDAsRootTests {
  /// Opens write-only, writes one byte, and prints the mode `fstat` gives, as chmod/12.t's
  /// `open ... O_WRONLY : write 0 x : fstat 0 mode`.
  static let writeThenFstat = """
    use Fcntl;
    sysopen(my $f, $ARGV[0], O_WRONLY) or die "open: $!";
    syswrite($f, "x") == 1 or die "write: $!";
    my @s = stat($f);
    printf "%o\\n", $s[2] & 07777;
    """

  static let truncateThenFstat = """
    use Fcntl;
    sysopen(my $f, $ARGV[0], O_WRONLY | O_TRUNC) or die "open: $!";
    my @s = stat($f);
    printf "%o\\n", $s[2] & 07777;
    """

  func mode(_ path: String) throws -> mode_t {
    var info = stat()
    try #require(stat(path, &info) == 0, "stat \(path): \(String(cString: strerror(errno)))")
    return info.st_mode & 0o7777
  }

  func asOther(_ script: String, _ path: String) throws -> String {
    let result = try run(
      ["runuser", "-u", TestEnvironment.otherUser, "--", "perl", "-e", script, path], cwd: "/")
    try #require(result.status == 0, "\(result)")
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  func make(_ path: String, _ mode: mode_t) throws {
    try Data("first\n".utf8).write(to: URL(fileURLWithPath: path))
    try #require(chmod(path, mode) == 0)
    try #require(try self.mode(path) == mode)
  }

  @Test(.needs("runuser", "perl"))
  func anotherUsersWriteOrTruncateClearsTheBitsWithPassthrough() throws {
    try #require(TestEnvironment.isRoot, "passthrough needs root")
    try MountFixture.withMount(options: ["--allow-other", "--fuse-debug"]) { m throws in
      // The other user reaches the mount point through the fixture's folder.
      try #require(chmod(m.base, 0o711) == 0)
      try #require(mkdir(m.path("open"), 0o777) == 0 && chmod(m.path("open"), 0o777) == 0)
      // Passthrough is on: root's own file is written by the kernel, not the daemon.
      let plain = m.path("open/plain")
      try Data(repeating: 7, count: 4096).write(to: URL(fileURLWithPath: plain))
      let log = try String(contentsOfFile: "\(m.state)/docsync.log", encoding: .utf8)
      #expect(!log.contains("opcode: WRITE"), "passthrough is not on")

      let cases: [(mode_t, mode_t)] = [
        (0o4777, 0o777), (0o2777, 0o777), (0o6777, 0o777),
        // Setgid without group execute is no set-ID bit (mandatory locking): kept.
        (0o2767, 0o2767), (0o6767, 0o2767), (0o4766, 0o766),
      ]
      for (index, (before, after)) in cases.enumerated() {
        let file = m.path("open/w\(index)")
        try make(file, before)
        let shown = try asOther(Self.writeThenFstat, file)
        #expect(
          shown == String(after, radix: 8),
          "write to \(String(before, radix: 8)): fstat shows \(shown)")
        #expect(try mode(file) == after, "write to \(String(before, radix: 8)): stat")
        let truncated = m.path("open/t\(index)")
        try make(truncated, before)
        let afterTruncate = try asOther(Self.truncateThenFstat, truncated)
        #expect(
          afterTruncate == String(after, radix: 8),
          "truncate of \(String(before, radix: 8)): fstat shows \(afterTruncate)")
        #expect(try mode(truncated) == after, "truncate of \(String(before, radix: 8)): stat")
      }
      // Root has CAP_FSETID: its write keeps the bits.
      let rootsOwn = m.path("open/root")
      try make(rootsOwn, 0o6777)
      let fd = open(rootsOwn, O_WRONLY | O_APPEND)
      try #require(fd >= 0)
      #expect(write(fd, "y", 1) == 1)
      close(fd)
      #expect(try mode(rootsOwn) == 0o6777)
      // The other user's writes landed, in the bytes of the file.
      #expect(
        try Data(contentsOf: URL(fileURLWithPath: m.path("open/w0"))) == Data("xirst\n".utf8))
      // The cleared modes are stored, not only shown.
      try m.remount()
      #expect(try mode(m.path("open/w0")) == 0o777)
      #expect(try mode(m.path("open/t2")) == 0o777)
    }
  }
}
