import SystemPackage

extension ConformanceSuite {
  static let fileChecks: [ConformanceCheck] = [
    ConformanceCheck(
      "create with O_EXCL makes an empty file and fails with EEXIST on an existing name", "files"
    ) {
      c in
      let file = try c.open("f", [.write, .create, .exclusive])
      try c.close(file)
      let status = try c.stat("f")
      try c.expectEqual(status.kind, .regular, "kind of new file")
      try c.expectEqual(status.size, 0, "size of new file")
      try c.expectError([.fileExists], "second O_CREAT|O_EXCL of f") {
        _ = try c.subject.open(c.path("f"), [.write, .create, .exclusive], mode: 0o644)
      }
      try c.mkdir("d")
      try c.expectError([.fileExists], "O_CREAT|O_EXCL on a directory name") {
        _ = try c.subject.open(c.path("d"), [.write, .create, .exclusive], mode: 0o644)
      }
    },
    ConformanceCheck("open of a missing file without O_CREAT fails with ENOENT", "files") { c in
      try c.expectError([.noSuchFileOrDirectory], "open missing") {
        _ = try c.subject.open(c.path("missing"), .read, mode: 0)
      }
      try c.expectError([.noSuchFileOrDirectory], "create in a missing folder") {
        _ = try c.subject.open(c.path("missing/f"), [.write, .create], mode: 0o644)
      }
    },
    ConformanceCheck("open of a directory for writing fails with EISDIR", "files") { c in
      try c.mkdir("d")
      try c.expectError([.isDirectory], "open d for writing") {
        _ = try c.subject.open(c.path("d"), .write, mode: 0)
      }
    },
    ConformanceCheck("a file used as a folder fails with ENOTDIR", "files") { c in
      try c.writeFile("f", "x")
      try c.expectError([.notDirectory], "stat f/x") {
        _ = try c.subject.status(c.path("f/x"), followSymlinks: false)
      }
      try c.expectError([.notDirectory], "mkdir f/x") {
        try c.subject.makeDirectory(c.path("f/x"), mode: 0o755)
      }
      try c.expectError([.notDirectory], "open f with O_DIRECTORY") {
        _ = try c.subject.open(c.path("f"), [.read, .directory], mode: 0)
      }
    },
    ConformanceCheck("writes at offsets read back byte for byte", "files") { c in
      let file = try c.open("f", [.readWrite, .create])
      try c.write(file, pattern(10_000, seed: 1), at: 0)
      try c.write(file, pattern(3_000, seed: 2), at: 4_000)
      try c.write(file, pattern(5_000, seed: 3), at: 8_000)
      var expected = pattern(10_000, seed: 1)
      expected.replaceSubrange(4_000..<7_000, with: pattern(3_000, seed: 2))
      expected.replaceSubrange(8_000..<10_000, with: pattern(5_000, seed: 3))
      try c.expectEqual(try c.read(file, at: 0, count: 20_000), expected, "read through handle")
      try c.expectEqual(
        try c.read(file, at: 3_999, count: 2), [expected[3_999], expected[4_000]],
        "read across a write boundary")
      try c.close(file)
      try c.expectContent("f", expected)
      try c.expectEqual(try c.stat("f").size, 13_000, "size")
    },
    ConformanceCheck("a read at or past the end of the file returns no bytes", "files") { c in
      try c.writeFile("f", "hello")
      let file = try c.open("f", .read)
      try c.expectEqual(try c.read(file, at: 3, count: 100), Array("lo".utf8), "short read")
      try c.expectEqual(try c.read(file, at: 5, count: 10), [], "read at the end")
      try c.expectEqual(try c.read(file, at: 1_000, count: 10), [], "read past the end")
      try c.close(file)
    },
    ConformanceCheck("holes in a sparse file read as zeros", "files") { c in
      let file = try c.open("f", [.readWrite, .create])
      try c.write(file, [1, 2, 3], at: 0)
      try c.write(file, [4, 5, 6], at: 1 << 20)
      try c.expectEqual(try c.stat("f").size, (1 << 20) + 3, "size of sparse file")
      let hole = try c.read(file, at: 3, count: (1 << 20) - 3)
      try c.expect(
        hole.count == (1 << 20) - 3 && hole.allSatisfy { $0 == 0 },
        "the hole reads as \(hole.count) bytes, not all zero")
      try c.expectEqual(try c.read(file, at: 1 << 20, count: 10), [4, 5, 6], "bytes after hole")
      try c.close(file)
    },
    ConformanceCheck("O_APPEND writes go to the end of the file", "files") { c in
      try c.writeFile("f", "abc")
      let file = try c.open("f", [.write, .append])
      try c.write(file, Array("def".utf8), at: 0)
      try c.write(file, Array("gh".utf8), at: 1)
      try c.close(file)
      try c.expectContent("f", "abcdefgh")
    },
    ConformanceCheck("O_TRUNC empties an existing file", "files") { c in
      try c.writeFile("f", pattern(5000))
      let file = try c.open("f", [.write, .truncate])
      try c.expectEqual(try c.subject.status(of: file).size, 0, "size after O_TRUNC")
      try c.close(file)
      try c.expectContent("f", [])
    },
    ConformanceCheck("fsync and fdatasync succeed and keep the data", "files") { c in
      let file = try c.open("f", [.readWrite, .create])
      try c.write(file, pattern(70_000))
      try c.step("fsync") { try c.subject.synchronize(file, dataOnly: false) }
      try c.write(file, [9], at: 100_000)
      try c.step("fdatasync") { try c.subject.synchronize(file, dataOnly: true) }
      try c.close(file)
      try c.expectEqual(try c.stat("f").size, 100_001, "size after fsync")
      try c.expectEqual(Array(try c.readFile("f").prefix(70_000)), pattern(70_000), "content")
    },
    ConformanceCheck("two open files see each other's writes at once", "files") { c in
      let a = try c.open("f", [.readWrite, .create])
      let b = try c.open("f", .readWrite)
      try c.write(a, Array("first".utf8))
      try c.expectEqual(try c.read(b, count: 100), Array("first".utf8), "b reads a's write")
      try c.write(b, Array("X".utf8), at: 2)
      try c.expectEqual(try c.read(a, count: 100), Array("fiXst".utf8), "a reads b's write")
      try c.close(a)
      try c.close(b)
    },
    ConformanceCheck("an open file stays readable and writable after unlink", "files") { c in
      try c.writeFile("f", "still here")
      let file = try c.open("f", .readWrite)
      try c.unlink("f")
      try c.expectMissing("f")
      try c.expectNames("", [])
      try c.expectEqual(try c.read(file, count: 100), Array("still here".utf8), "read after unlink")
      try c.write(file, Array("!".utf8), at: 10)
      try c.expectEqual(try c.read(file, count: 100), Array("still here!".utf8), "after write")
      let status = try c.step("fstat after unlink") { try c.subject.status(of: file) }
      try c.expectEqual(status.linkCount, 0, "link count of an unlinked open file")
      try c.close(file)
      try c.writeFile("f", "new")
      try c.expectContent("f", "new")
    },
    ConformanceCheck("a file of several MiB round-trips", "files") { c in
      let content = pattern(5 << 20, seed: 7)
      let file = try c.open("big", [.write, .create])
      var offset = 0
      while offset < content.count {
        let end = min(offset + 300_000, content.count)
        try c.write(file, Array(content[offset..<end]), at: Int64(offset))
        offset = end
      }
      try c.close(file)
      try c.expectContent("big", content)
    },
    ConformanceCheck("a write updates mtime and ctime", "files") { c in
      try c.writeFile("f", "a")
      let old = FileTime(seconds: 1_000_000_000, nanoseconds: 0)
      try c.step("utimens") {
        try c.subject.setTimes(c.path("f"), access: .set(old), modification: .set(old))
      }
      let before = try c.stat("f")
      let file = try c.open("f", .write)
      try c.write(file, Array("b".utf8), at: 1)
      try c.close(file)
      let after = try c.stat("f")
      try c.expect(after.modificationTime > old, "mtime \(after.modificationTime) after a write")
      try c.expect(
        after.changeTime >= before.changeTime, "ctime went back from \(before.changeTime)")
    },
    ConformanceCheck(
      "mmap writes are seen by read and writes by mmap reads", "files", requires: .mmap
    ) { c in
      let file = try c.open("f", [.readWrite, .create])
      try c.write(file, pattern(10_000))
      try c.step("mmap write") { try c.subject.mapWrite(file, [7, 7, 7], at: 4_095) }
      try c.expectEqual(
        try c.read(file, at: 4_094, count: 5),
        [pattern(10_000)[4_094], 7, 7, 7, pattern(10_000)[4_098]], "read after mmap write")
      try c.write(file, [1, 2], at: 9_000)
      try c.expectEqual(
        try c.step("mmap read") { try c.subject.mapRead(file, at: 8_999, count: 4) },
        [pattern(10_000)[8_999], 1, 2, pattern(10_000)[9_002]], "mmap read after write")
      try c.close(file)
    },
    ConformanceCheck("fallocate reserves space, keeps the size or punches a hole", "files") { c in
      let file = try c.open("f", [.readWrite, .create], mode: 0o644)
      try c.write(file, Array("abc".utf8))
      let mebibyte: Int64 = 1 << 20
      try c.step("fallocate 0..1 MiB") {
        try c.subject.allocate(file, mode: 0, offset: 0, length: mebibyte)
      }
      var status = try c.subject.status(of: file)
      try c.expectEqual(status.size, mebibyte, "size after fallocate")
      try c.expect(status.blocks * 512 >= mebibyte, "blocks after fallocate: \(status.blocks)")
      try c.step("fallocate KEEP_SIZE 1..2 MiB") {
        try c.subject.allocate(
          file, mode: AllocationMode.keepSize, offset: mebibyte, length: mebibyte)
      }
      status = try c.subject.status(of: file)
      try c.expectEqual(status.size, mebibyte, "size after fallocate KEEP_SIZE")
      try c.expect(status.blocks * 512 >= 2 * mebibyte, "blocks after KEEP_SIZE: \(status.blocks)")
      try c.write(file, Array("xyz".utf8), at: mebibyte - 3)
      try c.step("fallocate PUNCH_HOLE of the first 4 KiB") {
        try c.subject.allocate(
          file, mode: AllocationMode.punchHole | AllocationMode.keepSize, offset: 0, length: 4096)
      }
      try c.expectEqual(try c.read(file, count: 3), [0, 0, 0], "bytes in the hole")
      try c.expectEqual(
        try c.read(file, at: mebibyte - 3, count: 3), Array("xyz".utf8), "bytes after the hole")
      try c.expectEqual(try c.subject.status(of: file).size, mebibyte, "size after the hole")
      try c.close(file)
      try c.expectEqual(try c.stat("f").size, mebibyte, "size after close")
    },
  ]
}
