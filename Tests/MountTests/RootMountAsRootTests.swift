import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Root's private mount goes without `default_permissions`: only root reaches it, and the
/// kernel's mode checks let root through anyway, but under them the kernel asked for a folder's
/// attributes again after every create, rename and unlink in it (one GETATTR each).
@Suite("Root's private mount, as root", .docsyncOnly, .asRoot)
struct RootMountAsRootTests {
  /// The super options of the FUSE mount at `point`, from /proc/self/mountinfo.
  static func superOptions(_ point: String) -> [Substring] {
    let lines = MountFixture.procFile("/proc/self/mountinfo")?.split(separator: "\n") ?? []
    for line in lines {
      let fields = line.split(separator: " ")
      guard fields.count > 5, MountFixture.unescapeMountInfo(String(fields[4])) == point,
        let dash = fields.firstIndex(of: "-"), dash + 3 < fields.count
      else { continue }
      return fields[dash + 3].split(separator: ",")
    }
    return []
  }

  /// Twenty creates in one folder ask for no folder attributes, and the kernel still refuses
  /// root an executable-bit check on a file with none (the daemon answers ACCESS).
  @Test(.needs())
  func createsAskNoFolderAttributes() throws {
    try #require(TestEnvironment.isRoot, "the mount must be root's")
    try MountFixture.withMount(options: ["--fuse-debug"]) { m throws in
      #expect(!Self.superOptions(m.mountPoint).contains("default_permissions"))
      #expect(mkdir(m.path("folder"), 0o755) == 0)
      let before = try RequestCountTests.lineCount(m)
      for index in 0..<20 {
        let fd = open(m.path("folder/f\(index)"), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0)
        #expect(write(fd, "x", 1) == 1)
        close(fd)
      }
      #expect(try RequestCountTests.count("CREATE", in: m, after: before) == 20)
      #expect(
        try RequestCountTests.count("GETATTR", in: m, after: before) == 0, "\(m.logTail())")
      #expect(access(m.path("folder/f0"), R_OK | W_OK) == 0)
      #expect(access(m.path("folder/f0"), X_OK) == -1 && errno == EACCES)
      #expect(chmod(m.path("folder/f0"), 0o755) == 0)
      #expect(access(m.path("folder/f0"), X_OK) == 0)
    }
  }

  /// With --allow-other other users reach the mount, and the kernel checks modes for them.
  @Test(.needs())
  func allowOtherKeepsTheKernelsModeChecks() throws {
    try #require(TestEnvironment.isRoot, "the mount must be root's")
    try MountFixture.withMount(options: ["--allow-other"]) { m throws in
      let options = Self.superOptions(m.mountPoint)
      #expect(options.contains("default_permissions"), "\(options)")
      #expect(options.contains("allow_other"), "\(options)")
    }
  }
}
