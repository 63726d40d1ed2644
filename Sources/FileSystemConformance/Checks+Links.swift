import SystemPackage

extension ConformanceSuite {
  static let linkChecks: [ConformanceCheck] = [
    ConformanceCheck("symlink and readlink round-trip the target; lstat sees the link", "links") {
      c in
      try c.writeFile("f", "target content")
      try c.step("symlink") { try c.subject.makeSymbolicLink(c.path("l"), target: "f") }
      try c.expectEqual(
        try c.step("readlink") { try c.subject.readSymbolicLink(c.path("l")) }, "f", "readlink")
      let link = try c.lstat("l")
      try c.expectEqual(link.kind, .symbolicLink, "lstat kind")
      try c.expectEqual(link.size, 1, "lstat size is the target's length")
      try c.expectEqual(try c.stat("l").kind, .regular, "stat follows the link")
      try c.expectEqual(try c.stat("l").inode, try c.stat("f").inode, "stat inode")
      try c.expectError([.invalidArgument], "readlink of a regular file") {
        _ = try c.subject.readSymbolicLink(c.path("f"))
      }
      try c.expectError([.fileExists], "symlink over an existing name") {
        try c.subject.makeSymbolicLink(c.path("f"), target: "x")
      }
    },
    ConformanceCheck(
      "a dangling symlink is made, read and removed; stat fails with ENOENT", "links"
    ) {
      c in
      let target = "../nowhere/ünïcödé target with spaces"
      try c.step("symlink") { try c.subject.makeSymbolicLink(c.path("l"), target: target) }
      let read = try c.step("readlink") { try c.subject.readSymbolicLink(c.path("l")) }
      try c.expectEqual(Array(read.utf8), Array(target.utf8), "readlink bytes")
      try c.expectEqual(try c.lstat("l").size, Int64(target.utf8.count), "lstat size")
      try c.expectError([.noSuchFileOrDirectory], "stat of a dangling link") {
        _ = try c.subject.status(c.path("l"), followSymlinks: true)
      }
      try c.expectNames("", ["l"])
      try c.unlink("l")
      try c.expectMissing("l")
    },
    ConformanceCheck("a hard link shares inode and content; unlinking one keeps the other", "links")
    {
      c in
      try c.writeFile("a", "shared")
      try c.step("link") { try c.subject.makeHardLink(c.path("b"), to: c.path("a")) }
      let a = try c.stat("a")
      let b = try c.stat("b")
      try c.expectEqual(a.inode, b.inode, "inode of both names")
      try c.expectEqual(a.linkCount, 2, "link count of a")
      try c.expectEqual(b.linkCount, 2, "link count of b")
      let file = try c.open("b", .write)
      try c.write(file, Array("SH".utf8))
      try c.close(file)
      try c.expectContent("a", "SHared")
      try c.unlink("a")
      try c.expectContent("b", "SHared")
      try c.expectEqual(try c.stat("b").linkCount, 1, "link count after unlink")
      try c.expectError([.fileExists], "link over an existing name") {
        try c.subject.makeHardLink(c.path("b"), to: c.path("b"))
      }
    },
    ConformanceCheck("a hard link to a directory fails with EPERM", "links") { c in
      try c.mkdir("d")
      try c.expectError([.notPermitted], "link to d") {
        try c.subject.makeHardLink(c.path("e"), to: c.path("d"))
      }
    },
    ConformanceCheck("mkfifo makes a FIFO", "links") { c in
      try c.step("mknod fifo") {
        try c.subject.makeNode(c.path("p"), kind: .fifo, mode: 0o644, device: 0)
      }
      try c.expectEqual(try c.lstat("p").kind, .fifo, "kind of p")
      let entry = try c.list("").first { Array($0.name.utf8) == Array("p".utf8) }
      try c.expect(entry != nil, "p is not listed")
      if let kind = entry?.kind { try c.expectEqual(kind, .fifo, "d_type of p") }
      try c.expectError([.fileExists], "mkfifo over an existing name") {
        try c.subject.makeNode(c.path("p"), kind: .fifo, mode: 0o644, device: 0)
      }
      try c.unlink("p")
    },
    ConformanceCheck("mknod makes character and block devices", "links", requires: .deviceNodes) {
      c in
      let null = makeDevice(major: 1, minor: 3)
      try c.step("mknod c 1 3") {
        try c.subject.makeNode(c.path("null"), kind: .characterDevice, mode: 0o666, device: null)
      }
      let character = try c.lstat("null")
      try c.expectEqual(character.kind, .characterDevice, "kind of null")
      try c.expectEqual(character.device, null, "rdev of null")
      let loop = makeDevice(major: 7, minor: 300)
      try c.step("mknod b 7 300") {
        try c.subject.makeNode(c.path("loop"), kind: .blockDevice, mode: 0o600, device: loop)
      }
      try c.expectEqual(try c.lstat("loop").kind, .blockDevice, "kind of loop")
      try c.expectEqual(try c.lstat("loop").device, loop, "rdev of loop")
    },
    ConformanceCheck(
      "ctimes follow the order of the changes, whatever kind of node each one changed", "links"
    ) { c in
      // A regular file's ctime and a folder's must come from one clock: on two clocks a link
      // made after a mkdir showed the earlier ctime (the kernel's coarse clock for files).
      try c.writeFile("target", "x")
      var previous = FileTime(seconds: .min, nanoseconds: 0)
      var previousStep = "start"
      for round in 0..<40 {
        let steps: [(String, String, () throws -> Void)] = [
          ("mkdir d\(round)", "d\(round)", { try c.mkdir("d\(round)") }),
          (
            "link l\(round)", "target",
            { try c.subject.makeHardLink(c.path("l\(round)"), to: c.path("target")) }
          ),
          (
            "symlink s\(round)", "s\(round)",
            { try c.subject.makeSymbolicLink(c.path("s\(round)"), target: "target") }
          ),
          ("create f\(round)", "f\(round)", { try c.writeFile("f\(round)", "y") }),
          (
            "rename f\(round) into d\(round)", "d\(round)",
            { try c.rename("f\(round)", "d\(round)/f") }
          ),
        ]
        for (step, name, body) in steps {
          try c.step(step, body)
          let changed = try c.lstat(name).changeTime
          try c.expect(
            !(changed < previous),
            "\(step): ctime \(changed) is earlier than \(previous), of \(previousStep) before it")
          previous = changed
          previousStep = step
        }
      }
    },
  ]
}

/// glibc's `makedev`, a macro that Swift does not import.
func makeDevice(major: UInt64, minor: UInt64) -> UInt64 {
  ((major & 0xffff_f000) << 32) | ((major & 0xfff) << 8) | ((minor & 0xffff_ff00) << 12)
    | (minor & 0xff)
}
