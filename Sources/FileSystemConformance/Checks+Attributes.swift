import Glibc
import SystemPackage

extension ConformanceSuite {
  static let attributeChecks: [ConformanceCheck] = [
    ConformanceCheck("stat and lstat of the scratch folder say directory", "attributes") { c in
      try c.expectEqual(try c.stat("").kind, .directory, "kind of scratch folder")
      try c.expectEqual(try c.lstat("").kind, .directory, "lstat kind of scratch folder")
      try c.expectEqual(try c.stat("/").kind, .directory, "kind of the root")
      try c.expectError([.noSuchFileOrDirectory], "stat missing") { _ = try c.stat("missing") }
    },
    ConformanceCheck("chmod sets permission bits, setuid, setgid and sticky included", "attributes")
    {
      c in
      try c.writeFile("f", "x")
      for mode: UInt32 in [0o600, 0o755, 0o444, 0o4755, 0o2750, 0o000, 0o644] {
        try c.step("chmod f \(String(mode, radix: 8))") { try c.subject.setMode(c.path("f"), mode) }
        try c.expectEqual(
          String(try c.stat("f").permissions, radix: 8), String(mode, radix: 8), "mode of f")
      }
      try c.mkdir("d")
      try c.step("chmod d 1777") { try c.subject.setMode(c.path("d"), 0o1777) }
      try c.expectEqual(String(try c.stat("d").permissions, radix: 8), "1777", "mode of d")
    },
    ConformanceCheck("chmod changes ctime and leaves mtime", "attributes") { c in
      try c.writeFile("f", "x")
      let old = FileTime(seconds: 1_000_000_000, nanoseconds: 5)
      try c.step("utimens") {
        try c.subject.setTimes(c.path("f"), access: .set(old), modification: .set(old))
      }
      let before = try c.stat("f")
      try c.step("chmod") { try c.subject.setMode(c.path("f"), 0o600) }
      let after = try c.stat("f")
      try c.expectEqual(after.modificationTime, old, "mtime after chmod")
      try c.expect(after.changeTime >= before.changeTime, "ctime went back after chmod")
    },
    ConformanceCheck("truncate to a bigger size fills with zeros", "attributes") { c in
      try c.writeFile("f", "abc")
      try c.step("truncate f 10000") { try c.subject.truncate(c.path("f"), size: 10_000) }
      try c.expectEqual(try c.stat("f").size, 10_000, "size after truncate up")
      try c.expectContent("f", Array("abc".utf8) + [UInt8](repeating: 0, count: 9_997))
    },
    ConformanceCheck("truncate to a smaller size drops the tail for good", "attributes") { c in
      try c.writeFile("f", pattern(10_000))
      try c.step("truncate f 100") { try c.subject.truncate(c.path("f"), size: 100) }
      try c.expectContent("f", Array(pattern(10_000)[..<100]))
      try c.step("truncate f 5000") { try c.subject.truncate(c.path("f"), size: 5_000) }
      try c.expectContent(
        "f", Array(pattern(10_000)[..<100]) + [UInt8](repeating: 0, count: 4_900))
      try c.step("truncate f 0") { try c.subject.truncate(c.path("f"), size: 0) }
      try c.expectContent("f", [])
    },
    ConformanceCheck("ftruncate through an open file changes its size", "attributes") { c in
      let file = try c.open("f", [.readWrite, .create])
      try c.write(file, pattern(1_000))
      try c.step("ftruncate 10") { try c.subject.truncate(file, size: 10) }
      try c.expectEqual(try c.read(file, count: 100), Array(pattern(1_000)[..<10]), "after cut")
      try c.step("ftruncate 20") { try c.subject.truncate(file, size: 20) }
      try c.expectEqual(
        try c.read(file, count: 100),
        Array(pattern(1_000)[..<10]) + [UInt8](repeating: 0, count: 10),
        "after growth")
      try c.close(file)
      try c.expectEqual(try c.stat("f").size, 20, "size")
    },
    ConformanceCheck("utimens sets access and modification times with nanoseconds", "attributes") {
      c in
      try c.writeFile("f", "x")
      let atime = FileTime(seconds: 1_234_567_890, nanoseconds: 123_456_789)
      let mtime = FileTime(seconds: 1_600_000_000, nanoseconds: 987_654_321)
      try c.step("utimens") {
        try c.subject.setTimes(c.path("f"), access: .set(atime), modification: .set(mtime))
      }
      let status = try c.stat("f")
      try c.expectEqual(status.accessTime, atime, "atime")
      try c.expectEqual(status.modificationTime, mtime, "mtime")
      try c.mkdir("d")
      try c.step("utimens d") {
        try c.subject.setTimes(c.path("d"), access: .set(atime), modification: .set(mtime))
      }
      try c.expectEqual(try c.stat("d").modificationTime, mtime, "mtime of a directory")
    },
    ConformanceCheck("utimens with UTIME_OMIT leaves that time alone", "attributes") { c in
      try c.writeFile("f", "x")
      let atime = FileTime(seconds: 1_100_000_000, nanoseconds: 1)
      let mtime = FileTime(seconds: 1_200_000_000, nanoseconds: 2)
      try c.step("utimens") {
        try c.subject.setTimes(c.path("f"), access: .set(atime), modification: .set(mtime))
      }
      let other = FileTime(seconds: 1_300_000_000, nanoseconds: 3)
      try c.step("utimens omit atime") {
        try c.subject.setTimes(c.path("f"), access: .omit, modification: .set(other))
      }
      try c.expectEqual(try c.stat("f").accessTime, atime, "atime after UTIME_OMIT")
      try c.expectEqual(try c.stat("f").modificationTime, other, "mtime")
      try c.step("utimens omit mtime") {
        try c.subject.setTimes(c.path("f"), access: .set(other), modification: .omit)
      }
      try c.expectEqual(try c.stat("f").modificationTime, other, "mtime after UTIME_OMIT")
      try c.expectEqual(try c.stat("f").accessTime, other, "atime")
    },
    ConformanceCheck("utimens with UTIME_NOW sets the current time", "attributes") { c in
      try c.writeFile("f", "x")
      let old = FileTime(seconds: 1_000_000_000, nanoseconds: 0)
      try c.step("utimens") {
        try c.subject.setTimes(c.path("f"), access: .set(old), modification: .set(old))
      }
      let before = wallClock()
      try c.step("utimens now") {
        try c.subject.setTimes(c.path("f"), access: .now, modification: .now)
      }
      let after = wallClock()
      let status = try c.stat("f")
      for (name, time) in [("atime", status.accessTime), ("mtime", status.modificationTime)] {
        // File systems stamp with a coarse clock (jiffies), which may lag the fine one.
        try c.expect(
          time.seconds >= before.seconds - 1 && time.seconds <= after.seconds + 1,
          "\(name) \(time) after UTIME_NOW, between \(before) and \(after)")
      }
    },
    ConformanceCheck("a new file and folder belong to the caller's user and group", "attributes") {
      c in
      try c.writeFile("f", "x")
      try c.mkdir("d")
      for name in ["f", "d"] {
        let status = try c.stat(name)
        try c.expectEqual(status.user, c.subject.caller.user, "owner of \(name)")
        try c.expectEqual(status.group, c.subject.caller.group, "group of \(name)")
      }
    },
    ConformanceCheck(
      "chown gives a file to another user and group", "attributes", requires: .changeOwner
    ) {
      c in
      try c.writeFile("f", "x")
      try c.mkdir("d")
      for name in ["f", "d"] {
        try c.step("chown \(name) 1234:5678") {
          try c.subject.setOwner(c.path(name), user: 1234, group: 5678)
        }
        let status = try c.stat(name)
        try c.expectEqual(status.user, 1234, "owner of \(name)")
        try c.expectEqual(status.group, 5678, "group of \(name)")
      }
      try c.step("chgrp f 4321") { try c.subject.setOwner(c.path("f"), user: nil, group: 4321) }
      try c.expectEqual(try c.stat("f").user, 1234, "owner after chgrp")
      try c.expectEqual(try c.stat("f").group, 4321, "group after chgrp")
      try c.step("chown f 999") { try c.subject.setOwner(c.path("f"), user: 999, group: nil) }
      try c.expectEqual(try c.stat("f").user, 999, "owner after chown")
      try c.expectEqual(try c.stat("f").group, 4321, "group after chown")
    },
    ConformanceCheck("access reports existence, and execute only with an execute bit", "attributes")
    {
      c in
      try c.writeFile("f", "x", mode: 0o644)
      try c.step("chmod") { try c.subject.setMode(c.path("f"), 0o644) }
      try c.step("access f F_OK") { try c.subject.access(c.path("f"), []) }
      try c.step("access f R_OK") { try c.subject.access(c.path("f"), .read) }
      try c.expectError([.permissionDenied], "access X_OK on mode 644") {
        try c.subject.access(c.path("f"), .execute)
      }
      try c.step("chmod") { try c.subject.setMode(c.path("f"), 0o755) }
      try c.step("access f X_OK") { try c.subject.access(c.path("f"), .execute) }
      try c.expectError([.noSuchFileOrDirectory], "access of a missing file") {
        try c.subject.access(c.path("missing"), [])
      }
    },
    ConformanceCheck("statfs reports names of 255 bytes and sane block counts", "attributes") {
      c in
      let status = try c.step("statfs") { try c.subject.fileSystemStatus(c.path("")) }
      try c.expect(status.nameMaximum >= 255, "f_namemax \(status.nameMaximum) < 255")
      try c.expect(status.blockSize > 0, "f_frsize is 0")
      try c.expect(status.blocks > 0, "f_blocks is 0")
      try c.expect(status.freeBlocks <= status.blocks, "f_bfree > f_blocks in \(status)")
      try c.expect(status.availableBlocks <= status.freeBlocks, "f_bavail > f_bfree in \(status)")
      try c.expect(status.freeFiles <= status.files, "f_ffree > f_files in \(status)")
    },
  ]
}

func wallClock() -> FileTime {
  var now = timespec()
  clock_gettime(CLOCK_REALTIME, &now)
  return FileTime(now)
}
