import SystemPackage

extension ConformanceSuite {
  static let renameChecks: [ConformanceCheck] = [
    ConformanceCheck("rename moves a file to a new name and keeps its inode", "rename") { c in
      try c.writeFile("a", "content")
      let inode = try c.stat("a").inode
      try c.mkdir("d")
      try c.rename("a", "d/b")
      try c.expectMissing("a")
      try c.expectContent("d/b", "content")
      try c.expectEqual(try c.stat("d/b").inode, inode, "inode after rename")
      try c.expectNames("", ["d"])
      try c.expectNames("d", ["b"])
    },
    ConformanceCheck("rename over an existing file replaces it atomically", "rename") { c in
      try c.writeFile("new", "new content")
      try c.writeFile("old", "old content")
      let inode = try c.stat("new").inode
      let open = try c.open("old", .read)
      try c.rename("new", "old")
      try c.expectMissing("new")
      try c.expectContent("old", "new content")
      try c.expectEqual(try c.stat("old").inode, inode, "inode of the replacing file")
      try c.expectEqual(
        try c.read(open, count: 100), Array("old content".utf8),
        "an open file of the replaced file still reads the old content")
      try c.close(open)
      try c.expectNames("", ["old"])
    },
    ConformanceCheck("rename with RENAME_NOREPLACE fails with EEXIST on an existing name", "rename")
    {
      c in
      try c.writeFile("a", "a")
      try c.writeFile("b", "b")
      try c.expectError([.fileExists], "rename a to b with RENAME_NOREPLACE") {
        try c.subject.rename(c.path("a"), to: c.path("b"), flags: .noReplace)
      }
      try c.expectContent("a", "a")
      try c.expectContent("b", "b")
      try c.rename("a", "c", flags: .noReplace)
      try c.expectContent("c", "a")
      try c.expectMissing("a")
    },
    ConformanceCheck("rename with RENAME_EXCHANGE swaps two names or fails with EINVAL", "rename") {
      c in
      try c.writeFile("a", "a")
      try c.mkdir("b")
      do {
        try c.subject.rename(c.path("a"), to: c.path("b"), flags: .exchange)
      } catch let error as Errno where error == .invalidArgument {
        try c.expectContent("a", "a")
        try c.expectEqual(try c.stat("b").kind, .directory, "b after refused exchange")
        return
      }
      try c.expectContent("b", "a")
      try c.expectEqual(try c.stat("a").kind, .directory, "a after exchange")
      try c.expectError([.noSuchFileOrDirectory], "exchange with a missing name") {
        try c.subject.rename(c.path("a"), to: c.path("missing"), flags: .exchange)
      }
    },
    ConformanceCheck("rename of a directory over an empty directory replaces it", "rename") { c in
      try c.mkdir("a")
      try c.writeFile("a/f", "x")
      try c.mkdir("b")
      try c.rename("a", "b")
      try c.expectMissing("a")
      try c.expectContent("b/f", "x")
      try c.expectNames("", ["b"])
    },
    ConformanceCheck("rename of a directory over a non-empty one fails with ENOTEMPTY", "rename") {
      c in
      try c.mkdir("a")
      try c.mkdir("b")
      try c.writeFile("b/f", "x")
      try c.expectError([.directoryNotEmpty, .fileExists], "rename a over non-empty b") {
        try c.rename("a", "b")
      }
      try c.expectContent("b/f", "x")
      try c.expectEqual(try c.stat("a").kind, .directory, "a after refused rename")
    },
    ConformanceCheck("rename of a directory into its own subtree fails with EINVAL", "rename") {
      c in
      try c.mkdir("a")
      try c.mkdir("a/b")
      try c.expectError([.invalidArgument], "rename a to a/b/c") { try c.rename("a", "a/b/c") }
      try c.expectError([.invalidArgument], "rename a to a/c") { try c.rename("a", "a/c") }
      try c.expectNames("a", ["b"])
    },
    ConformanceCheck("rename of a file over a directory fails with EISDIR", "rename") { c in
      try c.writeFile("f", "x")
      try c.mkdir("d")
      try c.expectError([.isDirectory], "rename f over d") { try c.rename("f", "d") }
      try c.expectContent("f", "x")
    },
    ConformanceCheck("rename of a directory over a file fails with ENOTDIR", "rename") { c in
      try c.writeFile("f", "x")
      try c.mkdir("d")
      try c.expectError([.notDirectory], "rename d over f") { try c.rename("d", "f") }
      try c.expectContent("f", "x")
    },
    ConformanceCheck("rename of a missing name fails with ENOENT", "rename") { c in
      try c.expectError([.noSuchFileOrDirectory], "rename missing") { try c.rename("missing", "x") }
      try c.writeFile("f", "x")
      try c.expectError([.noSuchFileOrDirectory], "rename into a missing folder") {
        try c.rename("f", "missing/f")
      }
    },
    ConformanceCheck(
      "rename of a name onto itself or onto its own hard link changes nothing", "rename"
    ) {
      c in
      try c.writeFile("f", "x")
      try c.rename("f", "f")
      try c.expectContent("f", "x")
      try c.step("link") { try c.subject.makeHardLink(c.path("g"), to: c.path("f")) }
      try c.rename("f", "g")
      try c.expectNames("", ["f", "g"])
      try c.expectEqual(try c.stat("f").linkCount, 2, "link count")
    },
    ConformanceCheck("rename of a directory moves its whole tree", "rename") { c in
      try c.mkdir("a")
      try c.mkdir("a/b")
      try c.writeFile("a/b/f", "deep")
      try c.mkdir("x")
      try c.rename("a", "x/moved")
      try c.expectContent("x/moved/b/f", "deep")
      try c.expectNames("", ["x"])
      try c.expectNames("x", ["moved"])
    },
    ConformanceCheck(
      "renameat2 with RENAME_WHITEOUT leaves a whiteout or is refused, never a plain rename",
      "rename"
    ) { c in
      try c.writeFile("a", "a")
      do {
        try c.subject.rename(c.path("a"), to: c.path("b"), flags: .whiteout)
      } catch let error as Errno {
        // EINVAL from a file system without whiteouts (EPERM where a kernel still wants
        // CAP_MKNOD for them; Linux 5.8 and later let anyone ask).
        try c.expect(
          [.invalidArgument, .notPermitted].contains(error), "RENAME_WHITEOUT failed with \(error)")
        try c.expectContent("a", "a")
        try c.expectMissing("b")
        return
      }
      // Carried out: the source name now holds a whiteout, a 0:0 character device.
      try c.expectContent("b", "a")
      let whiteout = try c.lstat("a")
      try c.expectEqual(whiteout.kind, .characterDevice, "kind left at the source")
      try c.expectEqual(whiteout.device, 0, "device number of the whiteout")
    },
    ConformanceCheck(
      "rename of a folder over an empty one held open leaves the replaced one with no links",
      "rename"
    ) { c in
      try c.mkdir("from")
      try c.writeFile("from/inside", "x")
      try c.mkdir("over")
      let held = try c.subject.openDirectory(c.path("over"))
      defer { try? c.subject.close(held) }
      try c.expectEqual(try c.subject.status(of: held).linkCount, 2, "links of the empty folder")
      try c.rename("from", "over")
      try c.expectEqual(try c.subject.status(of: held).linkCount, 0, "links of the replaced folder")
      try c.expectEqual(try c.stat("over").linkCount, 2, "links of the moved folder")
      try c.expectContent("over/inside", "x")
      // An rmdir'ed folder held open has none either.
      try c.mkdir("gone")
      let removed = try c.subject.openDirectory(c.path("gone"))
      defer { try? c.subject.close(removed) }
      try c.rmdir("gone")
      try c.expectEqual(try c.subject.status(of: removed).linkCount, 0, "links after rmdir")
    },
  ]
}
