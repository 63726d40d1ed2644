import FileSystemConformance
import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What an ordinary user's mount is made of: Tools/test runs the mount tests as one, and these
/// checks make sure that it did, and that what docsync made is theirs and private.
@Suite("An ordinary user's mount", .docsyncOnly, .asOrdinaryUser)
struct OrdinaryUserMountTests {
  @Test(.needs())
  func theMountItsDaemonAndItsHubAreTheUsers() throws {
    try #require(!TestEnvironment.isRoot, "run the mount tests as an ordinary user (Tools/test)")
    try MountFixture.withMount { m throws in
      var info = stat()
      #expect(stat("/proc/\(try m.daemonPID())", &info) == 0)
      #expect(info.st_uid == getuid(), "the daemon runs as uid \(info.st_uid)")
      // fusermount3 records who mounted: user_id= in the mount's super options.
      let mountInfo = try #require(MountFixture.procFile("/proc/self/mountinfo"))
      let line = mountInfo.split(separator: "\n").first {
        $0.split(separator: " ").dropFirst(4).first.map {
          MountFixture.unescapeMountInfo(String($0))
        } == m.mountPoint
      }
      #expect(line?.contains("user_id=\(getuid()),") == true, "\(line ?? "no mountinfo line")")
      for path in [m.mountPoint, m.path(".versions")] {
        #expect(stat(path, &info) == 0 && info.st_uid == getuid(), "\(path): uid \(info.st_uid)")
      }
      // The hub docsync made holds every document: nobody else may read it.
      for path in [m.scratch("hub.sqlite")] {
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o077 == 0, "\(path) is \(String(info.st_mode & 0o7777, radix: 8))")
      }
    }
  }

  /// The permission checks that the mount's own run as this user relies on, against a plain
  /// folder of the local disk as the same user: proof that docsync refuses what ext4 refuses.
  @Test func permissionChecksAgreeWithAPlainFolderAsThisUser() throws {
    try #require(!TestEnvironment.isRoot, "run the mount tests as an ordinary user (Tools/test)")
    let subject = PosixSubject(root: ScratchFolder.make("docsync-plain-permissions"))
    let checks = ConformanceSuite.checks(for: subject.capabilities).filter {
      $0.group == "permissions"
    }
    #expect(checks.count >= 7)
    for check in checks { try ConformanceSuite.run(check, on: subject) }
  }

  /// The kernel walks the names it has cached without asking docsync: when a folder loses its
  /// search bit, docsync drops them, so that the walk asks and is refused, as on a local disk.
  @Test(.needs())
  func aFolderThatLosesSearchPermissionStopsItsCachedNames() throws {
    try #require(!TestEnvironment.isRoot, "run the mount tests as an ordinary user (Tools/test)")
    try MountFixture.withMount { m throws in
      #expect(mkdir(m.path("d"), 0o755) == 0)
      #expect(mkdir(m.path("d/sub"), 0o755) == 0)
      try Data("cached\n".utf8).write(to: URL(fileURLWithPath: m.path("d/sub/f")))
      var info = stat()
      #expect(stat(m.path("d/sub/f"), &info) == 0)
      #expect(chmod(m.path("d"), 0o600) == 0)
      // The names are dropped from the invalidation thread, right after chmod's reply.
      var refused = false
      for _ in 0..<200 {
        if stat(m.path("d/sub/f"), &info) != 0 && errno == EACCES {
          refused = true
          break
        }
        usleep(10_000)
      }
      #expect(refused, "stat of a name below a folder without search permission")
      #expect(open(m.path("d/sub/f"), O_RDONLY) == -1 && errno == EACCES)
      #expect(chmod(m.path("d"), 0o700) == 0)
      #expect(stat(m.path("d/sub/f"), &info) == 0 && info.st_size == 7)
    }
  }
}
