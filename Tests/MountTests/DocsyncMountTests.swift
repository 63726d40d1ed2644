import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The parts of a mount that only docsync has.
@Suite("docsync's own mount", .docsyncOnly)
struct DocsyncMountTests {
  @Test(.needs())
  func versionsFolderIsReservedReadOnlyAndEmpty() throws {
    try MountFixture.withMount { m throws in
      let versions = m.path(".versions")
      #expect(try describe(versions).kind == .directory)
      #expect(try FileManager.default.contentsOfDirectory(atPath: versions).isEmpty)
      let fd = open("\(versions)/new.txt", O_CREAT | O_WRONLY, 0o644)
      let error = errno
      if fd >= 0 { close(fd) }
      #expect(fd < 0, "created a file in .versions")
      #expect(error == EROFS || error == EACCES || error == EPERM, "errno \(error)")
      #expect(mkdir("\(versions)/folder", 0o755) != 0, "made a folder in .versions")
    }
  }

  @Test(.needs())
  func daemonWritesPidAndLogAndUnmountWaitsForIt() throws {
    try MountFixture.withMount { m throws in
      let pid = try m.daemonPID()
      #expect(kill(pid, 0) == 0, "daemon \(pid) from docsync.pid is not running")
      #expect(FileManager.default.fileExists(atPath: "\(m.state)/docsync.log"))
      try m.unmount()
      #expect(kill(pid, 0) != 0, "daemon \(pid) still running after docsync unmount returned")
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
      try m.mount()
    }
  }

  @Test(.needs())
  func sigtermFlushesAndUnmounts() throws {
    try MountFixture.withMount { m throws in
      try write(m.path("before-term.txt"), "written before SIGTERM\n")
      let pid = try m.daemonPID()
      #expect(kill(pid, SIGTERM) == 0)
      for _ in 0..<1_000 where kill(pid, 0) == 0 { usleep(10_000) }
      #expect(kill(pid, 0) != 0, "daemon \(pid) still running 10 s after SIGTERM")
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint), "SIGTERM left the mount")
      m.markUnmounted()
      try m.mount()
      #expect(try read(m.path("before-term.txt")) == "written before SIGTERM\n")
    }
  }
}
