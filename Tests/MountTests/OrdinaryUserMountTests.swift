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
}
