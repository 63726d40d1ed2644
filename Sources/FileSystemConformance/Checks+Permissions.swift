import Glibc
import SystemPackage

extension ConformanceSuite {
  /// What an ordinary user's own modes forbid it, as on a local disk. Only a caller that is not
  /// root is bound by them, so these checks need `.permissionChecks`.
  static let permissionChecks: [ConformanceCheck] = [
    ConformanceCheck(
      "a file without read permission cannot be opened for reading or have its attributes read",
      "permissions", requires: .permissionChecks
    ) {
      c in
      try c.writeFile("f", "secret", mode: 0o644)
      try c.step("setxattr user.a") {
        try c.subject.setExtendedAttribute(c.path("f"), name: "user.a", value: [1], flags: [])
      }
      try c.step("chmod 200") { try c.subject.setMode(c.path("f"), 0o200) }
      try c.expectError([.permissionDenied], "open for reading") { _ = try c.open("f", .read) }
      try c.expectError([.permissionDenied], "open for reading and writing") {
        _ = try c.open("f", .readWrite)
      }
      try c.expectError([.permissionDenied], "getxattr user.a") {
        _ = try c.subject.getExtendedAttribute(c.path("f"), name: "user.a", capacity: 64)
      }
      try c.expectError([.permissionDenied], "access R_OK") {
        try c.subject.access(c.path("f"), .read)
      }
      let file = try c.open("f", .write)
      try c.write(file, Array("public".utf8))
      try c.close(file)
      try c.step("chmod 600") { try c.subject.setMode(c.path("f"), 0o600) }
      try c.expectContent("f", "public")
    },
    ConformanceCheck(
      "a file without write permission cannot be opened for writing, truncated or given attributes",
      "permissions", requires: .permissionChecks
    ) {
      c in
      try c.writeFile("f", "keep", mode: 0o644)
      let early = try c.open("f", .write)
      try c.step("chmod 444") { try c.subject.setMode(c.path("f"), 0o444) }
      for options: OpenOptions in [.write, .readWrite, [.write, .append], [.read, .truncate]] {
        try c.expectError([.permissionDenied], "open \(options.rawValue)") {
          _ = try c.open("f", options)
        }
      }
      try c.expectError([.permissionDenied], "truncate by path") {
        try c.subject.truncate(c.path("f"), size: 0)
      }
      try c.expectError([.permissionDenied], "setxattr user.a") {
        try c.subject.setExtendedAttribute(c.path("f"), name: "user.a", value: [1], flags: [])
      }
      try c.expectError([.permissionDenied], "access W_OK") {
        try c.subject.access(c.path("f"), .write)
      }
      try c.expectContent("f", "keep")
      // A descriptor opened before the chmod keeps its right to write, as on a local disk.
      try c.write(early, Array("more".utf8), at: 4)
      try c.step("ftruncate of the earlier descriptor") { try c.subject.truncate(early, size: 6) }
      try c.close(early)
      try c.expectContent("f", "keepmo")
      // The owner sets times and modes without write permission.
      try c.step("utimens now") {
        try c.subject.setTimes(c.path("f"), access: .now, modification: .now)
      }
      let past = FileTime(seconds: 1_000_000_000, nanoseconds: 0)
      try c.step("utimens to a given time") {
        try c.subject.setTimes(c.path("f"), access: .set(past), modification: .set(past))
      }
      try c.expectEqual(try c.stat("f").modificationTime, past, "mtime set by the owner")
      try c.step("chmod 644") { try c.subject.setMode(c.path("f"), 0o644) }
      try c.step("truncate by path") { try c.subject.truncate(c.path("f"), size: 0) }
      try c.expectContent("f", "")
    },
    ConformanceCheck(
      "a folder without write permission refuses new names, removals and renames",
      "permissions", requires: .permissionChecks
    ) {
      c in
      try c.mkdir("d")
      try c.mkdir("d/sub")
      try c.writeFile("d/f", "in d")
      try c.writeFile("outside", "out")
      try c.step("chmod d 555") { try c.subject.setMode(c.path("d"), 0o555) }
      try c.expectError([.permissionDenied], "create in d") {
        _ = try c.open("d/new", [.write, .create])
      }
      try c.expectError([.permissionDenied], "mkdir in d") { try c.mkdir("d/newdir") }
      try c.expectError([.permissionDenied], "symlink in d") {
        try c.subject.makeSymbolicLink(c.path("d/l"), target: "f")
      }
      try c.expectError([.permissionDenied], "link into d") {
        try c.subject.makeHardLink(c.path("d/h"), to: c.path("outside"))
      }
      try c.expectError([.permissionDenied], "unlink in d") { try c.unlink("d/f") }
      try c.expectError([.permissionDenied], "rmdir in d") { try c.rmdir("d/sub") }
      try c.expectError([.permissionDenied], "rename within d") { try c.rename("d/f", "d/g") }
      try c.expectError([.permissionDenied], "rename out of d") { try c.rename("d/f", "g") }
      try c.expectError([.permissionDenied], "rename into d") { try c.rename("outside", "d/o") }
      try c.expectError([.permissionDenied], "rename over a name in d") {
        try c.rename("outside", "d/f")
      }
      try c.expectError([.permissionDenied], "access W_OK of d") {
        try c.subject.access(c.path("d"), .write)
      }
      // What is in the folder can still be read and written.
      let file = try c.open("d/f", .readWrite)
      try c.write(file, Array("IN".utf8))
      try c.close(file)
      try c.expectContent("d/f", "IN d")
      try c.expectNames("d", ["f", "sub"])
      try c.step("chmod d 755") { try c.subject.setMode(c.path("d"), 0o755) }
      try c.rename("d/f", "d/g")
      try c.unlink("d/g")
    },
    ConformanceCheck(
      "a folder without read permission cannot be listed, but the names in it can be reached",
      "permissions", requires: .permissionChecks
    ) {
      c in
      try c.mkdir("d")
      try c.writeFile("d/f", "reachable")
      try c.step("chmod d 300") { try c.subject.setMode(c.path("d"), 0o300) }
      try c.expectError([.permissionDenied], "opendir d") {
        _ = try c.subject.openDirectory(c.path("d"))
      }
      try c.expectContent("d/f", "reachable")
      try c.writeFile("d/g", "made")
      try c.step("chmod d 755") { try c.subject.setMode(c.path("d"), 0o755) }
      try c.expectNames("d", ["f", "g"])
    },
    ConformanceCheck(
      "a folder without search permission refuses every name in it, existing or new",
      "permissions", requires: .permissionChecks
    ) {
      c in
      try c.mkdir("d")
      try c.step("chmod d 600") { try c.subject.setMode(c.path("d"), 0o600) }
      try c.expectError([.permissionDenied], "stat of a name in d") { _ = try c.stat("d/never") }
      try c.expectError([.permissionDenied], "create in d") {
        _ = try c.open("d/new", [.write, .create])
      }
      try c.expectError([.permissionDenied], "mkdir in d") { try c.mkdir("d/sub") }
      try c.expectError([.permissionDenied], "access X_OK of d") {
        try c.subject.access(c.path("d"), .execute)
      }
      try c.expectNames("d", [])
      try c.step("chmod d 700") { try c.subject.setMode(c.path("d"), 0o700) }
      try c.writeFile("d/new", "now")
      try c.expectContent("d/new", "now")
    },
    ConformanceCheck(
      "a folder that moves to another folder must be writable itself", "permissions",
      requires: .permissionChecks
    ) {
      c in
      try c.mkdir("a")
      try c.mkdir("b")
      try c.mkdir("a/d")
      try c.step("chmod a/d 555") { try c.subject.setMode(c.path("a/d"), 0o555) }
      try c.expectError([.permissionDenied], "rename a/d to b/d") { try c.rename("a/d", "b/d") }
      try c.rename("a/d", "a/e")
      try c.step("chmod a/e 755") { try c.subject.setMode(c.path("a/e"), 0o755) }
      try c.rename("a/e", "b/d")
      try c.expectNames("b", ["d"])
    },
    ConformanceCheck(
      "the owner may change a file's group only to a group of its own, and never its owner",
      "permissions", requires: .permissionChecks
    ) {
      c in
      try c.writeFile("f", "x")
      let me = c.subject.caller
      let owner = try c.stat("f")
      try c.expectEqual(owner.user, me.user, "owner of a new file")
      try c.step("chown to the same ids") {
        try c.subject.setOwner(c.path("f"), user: me.user, group: owner.group)
      }
      try c.expectError([.notPermitted], "chown to another user") {
        try c.subject.setOwner(c.path("f"), user: me.user == 0 ? 1 : 0, group: nil)
      }
      let foreign = Self.groupOutside(me)
      try c.expectError([.notPermitted], "chgrp to group \(foreign), not the caller's") {
        try c.subject.setOwner(c.path("f"), user: nil, group: foreign)
      }
      try c.expectEqual(try c.stat("f").group, owner.group, "group after refused chgrp")
    },
  ]

  /// A group that `caller` is not in: neither its own nor one of this process's supplementary
  /// groups (a subject's caller is this process, or a made-up user with no supplementary groups).
  static func groupOutside(_ caller: Caller) -> UInt32 {
    var count = getgroups(0, nil)
    var groups = [gid_t](repeating: 0, count: Int(max(count, 0)))
    count = getgroups(count, &groups)
    let taken = Set(groups.prefix(Int(max(count, 0)))).union([caller.group, getegid()])
    return [65534, 0, 4242, 31_337].first { !taken.contains($0) } ?? 54_321
  }
}
