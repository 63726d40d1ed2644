import SystemPackage

extension ConformanceSuite {
  static let directoryChecks: [ConformanceCheck] = [
    ConformanceCheck(
      "mkdir makes an empty directory and fails with EEXIST on an existing name", "directories"
    ) {
      c in
      try c.mkdir("d")
      try c.expectEqual(try c.stat("d").kind, .directory, "kind of d")
      try c.expectNames("d", [])
      try c.expectError([.fileExists], "mkdir d again") { try c.mkdir("d") }
      try c.writeFile("f", "x")
      try c.expectError([.fileExists], "mkdir over a file") { try c.mkdir("f") }
      try c.expectError([.noSuchFileOrDirectory], "mkdir in a missing folder") {
        try c.mkdir("missing/d")
      }
    },
    ConformanceCheck("rmdir removes an empty directory", "directories") { c in
      try c.mkdir("d")
      try c.rmdir("d")
      try c.expectMissing("d")
      try c.expectError([.noSuchFileOrDirectory], "rmdir of a missing directory") {
        try c.rmdir("d")
      }
    },
    ConformanceCheck("rmdir of a non-empty directory fails with ENOTEMPTY", "directories") { c in
      try c.mkdir("d")
      try c.writeFile("d/f", "x")
      try c.expectError([.directoryNotEmpty, .fileExists], "rmdir d") { try c.rmdir("d") }
      try c.expectContent("d/f", "x")
    },
    ConformanceCheck(
      "rmdir of a file fails with ENOTDIR and unlink of a directory with EISDIR", "directories"
    ) {
      c in
      try c.writeFile("f", "x")
      try c.mkdir("d")
      try c.expectError([.notDirectory], "rmdir f") { try c.rmdir("f") }
      try c.expectError([.isDirectory], "unlink d") { try c.unlink("d") }
      try c.expectError([.noSuchFileOrDirectory], "unlink missing") { try c.unlink("missing") }
    },
    ConformanceCheck("readdir lists every entry exactly once, with . and ..", "directories") { c in
      try c.mkdir("d")
      try c.writeFile("d/file", "x")
      try c.mkdir("d/sub")
      try c.step("symlink") { try c.subject.makeSymbolicLink(c.path("d/link"), target: "file") }
      let entries = try c.list("d", batch: 2)
      let names = entries.map(\.name).sorted { Array($0.utf8).lexicographicallyPrecedes($1.utf8) }
      try c.expectEqual(names, [".", "..", "file", "link", "sub"], "names in d")
      let kinds: [String: FileKind] = [
        ".": .directory, "..": .directory, "file": .regular, "link": .symbolicLink,
        "sub": .directory,
      ]
      for entry in entries {
        if let kind = entry.kind {
          try c.expectEqual(kind, kinds[entry.name], "d_type of \(entry.name)")
        }
        if !isDotOrDotDot(entry.name) {
          try c.expectEqual(
            entry.inode, try c.lstat("d/" + entry.name).inode, "d_ino of \(entry.name)")
        }
      }
    },
    ConformanceCheck("readdir of 1,000 entries lists each exactly once", "directories") { c in
      try c.mkdir("d")
      let expected = (0..<1_000).map { "entry-\($0)-" + String(repeating: "x", count: $0 % 50) }
      for (index, name) in expected.enumerated() {
        if index % 10 == 0 { try c.mkdir("d/" + name) } else { try c.writeFile("d/" + name, []) }
      }
      try c.expectNames("d", expected)
      let names = try c.list("d", batch: 97).map(\.name)
      try c.expectEqual(names.count, 1_002, "entries with . and ..")
    },
    ConformanceCheck("readdir keeps going while entries are added and removed", "directories") {
      c in
      try c.mkdir("d")
      let original = (0..<300).map { "old-\($0)" }
      for name in original { try c.writeFile("d/" + name, []) }
      let directory = try c.step("opendir") { try c.subject.openDirectory(c.path("d")) }
      defer { try? c.subject.close(directory) }
      var seen = try c.step("readdir") { try c.subject.readDirectory(directory, maximumCount: 50) }
        .map(\.name)
      var removed: Set<String> = []
      for index in stride(from: 1, to: 300, by: 3) {
        try c.unlink("d/old-\(index)")
        removed.insert("old-\(index)")
      }
      let added = (0..<100).map { "new-\($0)" }
      for name in added { try c.writeFile("d/" + name, []) }
      while true {
        let next = try c.step("readdir") {
          try c.subject.readDirectory(directory, maximumCount: 50)
        }
        if next.isEmpty { break }
        seen += next.map(\.name)
      }
      var counts: [[UInt8]: Int] = [:]
      for name in seen { counts[Array(name.utf8), default: 0] += 1 }
      for (name, count) in counts where count > 1 {
        throw ConformanceFailure(
          "readdir listed \(String(decoding: name, as: UTF8.self)) \(count) times")
      }
      let allowed = Set((original + added + [".", ".."]).map { Array($0.utf8) })
      for name in counts.keys where !allowed.contains(name) {
        throw ConformanceFailure(
          "readdir listed \(String(decoding: name, as: UTF8.self)), which never existed")
      }
      for name in original + [".", ".."] where !removed.contains(name) {
        try c.expect(
          counts[Array(name.utf8)] == 1, "readdir lost \(name), which existed throughout")
      }
    },
    ConformanceCheck("fsyncdir succeeds on an open directory", "directories") { c in
      try c.mkdir("d")
      try c.writeFile("d/f", "x")
      let directory = try c.step("opendir") { try c.subject.openDirectory(c.path("d")) }
      try c.step("fsyncdir") { try c.subject.synchronize(directory) }
      try c.step("closedir") { try c.subject.close(directory) }
    },
    ConformanceCheck("opendir of a file fails with ENOTDIR", "directories") { c in
      try c.writeFile("f", "x")
      try c.expectError([.notDirectory], "opendir f") {
        _ = try c.subject.openDirectory(c.path("f"))
      }
      try c.expectError([.noSuchFileOrDirectory], "opendir missing") {
        _ = try c.subject.openDirectory(c.path("missing"))
      }
    },
  ]
}
