import SystemPackage

extension ConformanceSuite {
  static let nameChecks: [ConformanceCheck] = [
    ConformanceCheck("a 255-byte name works and a 256-byte name fails with ENAMETOOLONG", "names") {
      c in
      let longest = String(repeating: "n", count: 255)
      let tooLong = String(repeating: "n", count: 256)
      try c.writeFile(longest, "x")
      try c.expectContent(longest, "x")
      try c.expectNames("", [longest])
      // 127 two-byte characters and one more byte: the limit counts bytes, not characters.
      let wide = String(repeating: "é", count: 127) + "e"
      try c.mkdir(wide)
      try c.expectNames("", [longest, wide])
      try c.expectError([.fileNameTooLong], "create a 256-byte name") {
        _ = try c.subject.open(c.path(tooLong), [.write, .create], mode: 0o644)
      }
      try c.expectError([.fileNameTooLong], "mkdir a 256-byte name") { try c.mkdir(tooLong) }
      try c.expectError([.fileNameTooLong], "rename to a 256-byte name") {
        try c.rename(longest, tooLong)
      }
      try c.expectError([.fileNameTooLong], "stat a 256-byte name") { _ = try c.stat(tooLong) }
    },
    ConformanceCheck("names with spaces, newlines, quotes and non-ASCII round-trip", "names") { c in
      let names = [
        "with space", " leading and trailing ", "new\nline", "tab\tand\rreturn", "quote\"'`",
        "back\\slash", "日本語のファイル", "emoji 🎉", "-dash", "#hash#", "~tilde~", "...",
        ".hidden", "a:b;c*d?e|f<g>",
      ]
      for (index, name) in names.enumerated() { try c.writeFile(name, "\(index)") }
      try c.expectNames("", names)
      for (index, name) in names.enumerated() { try c.expectContent(name, "\(index)") }
      try c.rename(names[0], "renamed é")
      try c.expectContent("renamed é", "0")
    },
    ConformanceCheck("NFC and NFD spellings of é are two different files", "names") { c in
      let nfc = String(decoding: [0x63, 0x61, 0x66, 0xC3, 0xA9], as: UTF8.self)  // "café"
      let nfd = String(decoding: [0x63, 0x61, 0x66, 0x65, 0xCC, 0x81], as: UTF8.self)
      try c.writeFile(nfc, "composed")
      try c.expectError([.noSuchFileOrDirectory], "stat of the NFD spelling") {
        _ = try c.subject.status(c.path(nfd), followSymlinks: false)
      }
      try c.writeFile(nfd, "decomposed")
      try c.expectContent(nfc, "composed")
      try c.expectContent(nfd, "decomposed")
      try c.expect(try c.stat(nfc).inode != c.stat(nfd).inode, "NFC and NFD share an inode")
      let listed = try c.names("")
      try c.expectEqual(listed.count, 2, "entries in the listing")
      try c.expect(listed.contains(Array(nfc.utf8)), "NFC bytes not listed: \(listed)")
      try c.expect(listed.contains(Array(nfd.utf8)), "NFD bytes not listed: \(listed)")
      try c.unlink(nfd)
      try c.expectContent(nfc, "composed")
      try c.expectEqual(try c.names(""), [Array(nfc.utf8)], "listing after unlink of NFD")
    },
    ConformanceCheck("a path longer than PATH_MAX works one component at a time", "names") { c in
      let component = String(repeating: "d", count: 200)
      var path = ""
      while path.utf8.count <= 4_400 {
        path += (path.isEmpty ? "" : "/") + component
        try c.mkdir(path)
      }
      try c.expect(c.path(path).utf8.count > 4_096, "path is not longer than PATH_MAX")
      try c.writeFile(path + "/file", "deep")
      try c.expectContent(path + "/file", "deep")
      try c.rename(path + "/file", path + "/renamed")
      try c.expectNames(path, ["renamed"])
      try c.step("symlink deep") {
        try c.subject.makeSymbolicLink(c.path(path + "/link"), target: "renamed")
      }
      try c.expectContent(path + "/link", "deep")
      try c.setXattr(path + "/renamed", "user.deep", [1])
      try c.expectEqual(try c.getXattr(path + "/renamed", "user.deep"), [1], "deep xattr")
      try c.unlink(path + "/renamed")
      try c.unlink(path + "/link")
      try c.rmdir(path)
    },
    ConformanceCheck("a .versions name in a subfolder is an ordinary name", "names") { c in
      try c.writeFile(".versions", "file")
      try c.expectContent(".versions", "file")
      try c.mkdir("sub")
      try c.mkdir("sub/.versions")
      try c.writeFile("sub/.versions/f", "inside")
      try c.expectContent("sub/.versions/f", "inside")
      try c.rename(".versions", "sub/.versions/g")
      try c.rename("sub/.versions", "other")
      try c.mkdir("sub/.versions")
      try c.rename("other", "sub/.versions")
      try c.expectNames("sub/.versions", ["f", "g"])
      try c.unlink("sub/.versions/f")
      try c.unlink("sub/.versions/g")
      try c.rmdir("sub/.versions")
      try c.expectNames("sub", [])
    },
  ]
}
