import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A change made only through a shared mapping (and `msync`) on root's mount, where FUSE
/// passthrough maps the working file itself (issue 45): the file's mtime and ctime move, and
/// the change becomes a version that the other device shows, with the same mtime.
@Suite("A write through a shared mapping, with passthrough, as root", .asRoot)
struct MappedWriteAsRootTests {
  func times(_ path: String) throws -> (modification: timespec, change: timespec) {
    var info = stat()
    guard stat(path, &info) == 0 else { throw TestFailure("stat \(path): \(errnoText(errno))") }
    return (info.st_mtim, info.st_ctim)
  }

  func earlier(_ a: timespec, _ b: timespec) -> Bool {
    (a.tv_sec, a.tv_nsec) < (b.tv_sec, b.tv_nsec)
  }

  @Test(.needs())
  func aMappedWriteMovesTheTimesAndSyncs() throws {
    try #require(TestEnvironment.isRoot, "passthrough needs root")
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      let path = a.path("mapped.db")
      try Data("0123456789abcdef".utf8).write(to: URL(fileURLWithPath: path))
      try library.sync(a, b)
      let before = try times(path)
      usleep(20_000)
      let fd = open(path, O_RDWR)
      try #require(fd >= 0, "open: \(errnoText(errno))")
      let mapping = mmap(nil, 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
      try #require(mapping != MAP_FAILED, "mmap: \(errnoText(errno))")
      _ = "MAPPED".utf8.withContiguousStorageIfAvailable { bytes in
        memcpy(mapping! + 4, bytes.baseAddress!, bytes.count)
      }
      #expect(msync(mapping, 16, MS_SYNC) == 0)
      var shown = stat()
      #expect(fstat(fd, &shown) == 0)
      #expect(earlier(before.modification, shown.st_mtim), "mtime after msync: \(shown.st_mtim)")
      #expect(earlier(before.change, shown.st_ctim), "ctime after msync: \(shown.st_ctim)")
      munmap(mapping, 16)
      close(fd)
      let after = try times(path)
      #expect(earlier(before.modification, after.modification))
      try library.sync(a, b)
      let arrived = try String(contentsOfFile: b.path("mapped.db"), encoding: .utf8)
      #expect(arrived == "0123MAPPEDabcdef", "the desktop shows \(arrived)")
      let there = try times(b.path("mapped.db")).modification
      #expect(
        there.tv_sec == after.modification.tv_sec && there.tv_nsec == after.modification.tv_nsec,
        "the desktop's mtime \(there), the laptop's \(after.modification)")
    }
  }
}
