import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// atime through the mount (issue 45): an atime set with utimensat is kept across remounts
/// (the daemon's own reads of a working file, hashing it at a remount, never move it), and a
/// read moves it as relatime says.
@Suite("Access times through the mount")
struct AccessTimeTests {
  func times(_ path: String) throws -> (access: timespec, modification: timespec) {
    var info = stat()
    try #require(stat(path, &info) == 0, "stat \(path): \(String(cString: strerror(errno)))")
    return (info.st_atim, info.st_mtim)
  }

  func set(_ path: String, access: timespec, modification: timespec) throws {
    try #require(utimensat(AT_FDCWD, path, [access, modification], 0) == 0)
  }

  func same(_ a: timespec, _ b: timespec) -> Bool { a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec }

  @Test(.needs())
  func anAtimeSetWithUtimensatSurvivesRemounts() throws {
    try MountFixture.withMount { m throws in
      try Data("some bytes\n".utf8).write(to: URL(fileURLWithPath: m.path("f")))
      let atime = timespec(tv_sec: 1_000_000_000, tv_nsec: 123_456_789)
      let mtime = timespec(tv_sec: 1_100_000_000, tv_nsec: 5)
      try set(m.path("f"), access: atime, modification: mtime)
      // Only the atime, as `touch -a` does.
      try Data("other\n".utf8).write(to: URL(fileURLWithPath: m.path("g")))
      let onlyAccess = timespec(tv_sec: 900_000_000, tv_nsec: 0)
      try set(
        m.path("g"), access: onlyAccess, modification: timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2))
      let gModified = try times(m.path("g")).modification
      for round in 1...2 {
        try m.remount()
        let f = try times(m.path("f"))
        #expect(same(f.access, atime), "remount \(round): atime of f is \(f.access)")
        #expect(same(f.modification, mtime), "remount \(round): mtime of f is \(f.modification)")
        let g = try times(m.path("g"))
        #expect(same(g.access, onlyAccess), "remount \(round): atime of g is \(g.access)")
        #expect(same(g.modification, gModified), "remount \(round): mtime of g")
      }
      // A read now moves it (a day old), and a second read right after does not (relatime).
      _ = try Data(contentsOf: URL(fileURLWithPath: m.path("f")))
      let read = try times(m.path("f")).access
      #expect(read.tv_sec > atime.tv_sec, "atime after a read is \(read)")
      _ = try Data(contentsOf: URL(fileURLWithPath: m.path("f")))
      #expect(same(try times(m.path("f")).access, read), "a second read moved atime again")
    }
  }
}
