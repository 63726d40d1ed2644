import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Writing, truncating or chowning a set-ID file clears its set-ID bits, as on a local disk.
/// docsync does it itself (FUSE_HANDLE_KILLPRIV_V2, so that writes stop asking for
/// `security.capability`); an ordinary user lacks CAP_FSETID, so every one of these clears.
@Suite("Set-ID bits through the mount", .docsyncOnly, .asOrdinaryUser)
struct SetIDTests {
  static func mode(_ path: String) throws -> mode_t {
    var info = stat()
    try #require(stat(path, &info) == 0, "stat \(path): \(String(cString: strerror(errno)))")
    return info.st_mode & 0o7777
  }

  /// Makes `path` with `mode` (chmod, so the umask does not interfere).
  static func make(_ path: String, mode: mode_t) throws {
    try Data("first\n".utf8).write(to: URL(fileURLWithPath: path))
    try #require(chmod(path, mode) == 0, "chmod \(path): \(String(cString: strerror(errno)))")
    #expect(try Self.mode(path) == mode)
  }

  static func append(_ path: String) throws {
    let fd = open(path, O_WRONLY | O_APPEND)
    try #require(fd >= 0, "open \(path): \(String(cString: strerror(errno)))")
    defer { close(fd) }
    #expect(write(fd, "more\n", 5) == 5)
  }

  @Test(.needs())
  func aWriteClearsSetuidAndSetgidWhereTheGroupMayExecute() throws {
    try #require(!TestEnvironment.isRoot, "root has CAP_FSETID: run as an ordinary user")
    try MountFixture.withMount { m throws in
      try Self.make(m.path("tool"), mode: 0o6755)
      try Self.append(m.path("tool"))
      #expect(try Self.mode(m.path("tool")) == 0o755)
      // Without group execute, setgid is not a set-ID bit to clear (it marks mandatory
      // locking), and a write keeps it, as ext4 does.
      try Self.make(m.path("locked"), mode: 0o2644)
      try Self.append(m.path("locked"))
      #expect(try Self.mode(m.path("locked")) == 0o2644)
      // Kept after a remount: the cleared mode is stored, not only shown.
      try m.remount()
      #expect(try Self.mode(m.path("tool")) == 0o755)
    }
  }

  @Test(.needs())
  func aTruncateAndAChownClearSetuid() throws {
    try #require(!TestEnvironment.isRoot, "root has CAP_FSETID: run as an ordinary user")
    try MountFixture.withMount { m throws in
      try Self.make(m.path("truncated"), mode: 0o4755)
      #expect(truncate(m.path("truncated"), 0) == 0)
      #expect(try Self.mode(m.path("truncated")) == 0o755)
      try Self.make(m.path("chowned"), mode: 0o4755)
      #expect(chown(m.path("chowned"), getuid(), getgid()) == 0)
      #expect(try Self.mode(m.path("chowned")) == 0o755)
      // A chmod still sets what it is asked to.
      #expect(chmod(m.path("chowned"), 0o4711) == 0)
      #expect(try Self.mode(m.path("chowned")) == 0o4711)
    }
  }
}
