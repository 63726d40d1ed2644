import Glibc
import SystemPackage

extension ConformanceSuite {
  /// Second counts a program can set with utimensat, in increasing order: year 0, around the
  /// ends of 64-bit nanoseconds (1677, 2262), of 32-bit time (1901, 2038), 2222, 2486, the
  /// crash of issue 45 (2514), and the last second of year 2147483647.
  static let extremeSeconds: [Int64] = [
    -62_167_219_200, -9_223_372_037, -9_223_372_036, -2_147_483_648, -1, 0, 2_147_483_647,
    2_147_483_648, 7_952_342_400, 9_223_372_036, 9_223_372_037, 16_447_446_400, 17_179_869_183,
    67_767_976_233_532_799,
  ]

  static let timeChecks: [ConformanceCheck] = [
    ConformanceCheck(
      "utimens with any time keeps it, or clamps it toward 1970 in order, and fails nothing",
      "attributes"
    ) { c in
      try c.writeFile("f", "x")
      try c.mkdir("d")
      for name in ["f", "d"] {
        var previous: FileTime? = nil
        for seconds in extremeSeconds {
          let asked = FileTime(seconds: seconds, nanoseconds: 123_456_789)
          try c.step("utimens \(name) \(asked)") {
            try c.subject.setTimes(c.path(name), access: .set(asked), modification: .set(asked))
          }
          let status = try c.stat(name)
          let kept = status.modificationTime
          try c.expectEqual(status.accessTime, kept, "atime of \(name) set with mtime to \(asked)")
          // Every Linux file system keeps 32-bit times; beyond them a file system may clamp
          // (ext4 to 1901 and 2446, docsync to 1677 and 2262), never wrap or fail.
          // At a disk's first and last second the kernel keeps whole seconds (ext4 at 1901).
          if (Int64(Int32.min) + 1...Int64(Int32.max) - 1).contains(seconds) {
            try c.expectEqual(kept, asked, "time of \(name)")
          } else if kept != asked && kept.seconds != asked.seconds {
            let towardEpoch =
              seconds > 0
              ? kept.seconds >= Int64(Int32.max) && kept < asked
              : kept.seconds <= Int64(Int32.min) && asked < kept
            try c.expect(
              towardEpoch, "\(name) set to \(asked) shows \(kept): not a clamp toward 1970")
          }
          if let previous {
            try c.expect(!(kept < previous), "\(name): \(asked) shows \(kept), before \(previous)")
          }
          previous = kept
        }
        // Still an ordinary time afterwards.
        let ordinary = FileTime(seconds: 1_700_000_000, nanoseconds: 5)
        try c.subject.setTimes(c.path(name), access: .set(ordinary), modification: .set(ordinary))
        try c.expectEqual(try c.stat(name).modificationTime, ordinary, "time of \(name)")
      }
      try c.expectContent("f", "x")
    },
    ConformanceCheck("a read moves atime as relatime says, from the page cache too", "attributes") {
      c in
      // Written through a descriptor that reads too, so a kernel keeps the pages cached and
      // serves the later read without asking the file system.
      let file = try c.open("f", [.readWrite, .create], mode: 0o644)
      try c.write(file, Array("cached bytes".utf8))
      try c.expectEqual(try c.read(file, count: 6), Array("cached".utf8), "read back")
      try c.close(file)
      // A day old and not later than the mtime: relatime moves it at the next read.
      let old = FileTime(seconds: 1_000_000_000, nanoseconds: 0)
      try c.subject.setTimes(c.path("f"), access: .set(old), modification: .set(old))
      try c.expectEqual(try c.stat("f").accessTime, old, "atime as set")
      let reader = try c.open("f", .read)
      try c.expectEqual(try c.read(reader, count: 6), Array("cached".utf8), "read")
      try c.close(reader)
      let moved = try c.stat("f").accessTime
      try c.expect(old < moved, "atime after a read is still \(moved)")
      // Nothing but a read moved it: the mtime stays as set.
      try c.expectEqual(try c.stat("f").modificationTime, old, "mtime after a read")
    },
    ConformanceCheck(
      "a change made only through a shared mapping moves mtime and ctime", "attributes",
      requires: .mmap
    ) { c in
      try c.writeFile("f", "0123456789")
      let old = FileTime(seconds: 1_000_000_000, nanoseconds: 0)
      try c.subject.setTimes(c.path("f"), access: .set(old), modification: .set(old))
      let file = try c.open("f", .readWrite)
      let before = try c.subject.status(of: file)
      // Past the coarse clock's tick, so a moved ctime shows on any disk.
      usleep(20_000)
      try c.step("write through the mapping and msync") {
        try c.subject.mapWrite(file, Array("ABC".utf8), at: 2)
      }
      for (what, status) in [
        ("fstat", try c.subject.status(of: file)), ("stat", try c.stat("f")),
      ] {
        try c.expect(old < status.modificationTime, "\(what): mtime \(status.modificationTime)")
        try c.expect(
          before.changeTime < status.changeTime,
          "\(what): ctime \(status.changeTime), was \(before.changeTime)")
      }
      try c.close(file)
      try c.expectContent("f", "01ABC56789")
      try c.expect(old < (try c.stat("f")).modificationTime, "mtime after close")
    },
  ]
}
