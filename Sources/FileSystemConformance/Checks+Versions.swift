import SystemPackage

extension ConformanceSuite {
  /// Errors accepted when something tries to take the reserved name `.versions` at the root.
  ///
  /// EEXIST is what the kernel answers by itself for `mkdir` and `O_CREAT|O_EXCL`, since the
  /// name exists; EACCES, EPERM and EROFS are what docsync may answer when it refuses.
  public static let reservedNameErrors: [Errno] = [
    .fileExists, .permissionDenied, .notPermitted, .readOnlyFileSystem,
  ]

  /// Errors accepted when renaming over `.versions` at the root: ``reservedNameErrors``, plus
  /// EISDIR (a file over a directory, decided by the kernel before docsync sees it) and
  /// ENOTEMPTY (a directory over a non-empty one).
  public static let reservedRenameErrors: [Errno] =
    reservedNameErrors + [.isDirectory, .directoryNotEmpty]

  /// Errors accepted for a write inside `.versions`: versions are immutable (DESIGN.md §1).
  public static let versionsWriteErrors: [Errno] = [.readOnlyFileSystem, .permissionDenied]

  /// Errors accepted for moving a file into `.versions`: EXDEV (another file system as far as
  /// `mv` knows, so it falls back to copying, which is refused), EROFS or EACCES.
  public static let versionsMoveErrors: [Errno] = [
    .improperLink, .readOnlyFileSystem, .permissionDenied,
  ]

  static let versionsChecks: [ConformanceCheck] = [
    ConformanceCheck(
      ".versions at the root is listed as an empty directory only its owner may write",
      "versions",
      requires: .docsyncRoot
    ) {
      c in
      let root = try c.list("/")
      let entry = root.first { Array($0.name.utf8) == Array(".versions".utf8) }
      try c.expect(entry != nil, ".versions is not listed at the root")
      if let kind = entry?.kind { try c.expectEqual(kind, .directory, "d_type of .versions") }
      let status = try c.stat("/.versions")
      try c.expectEqual(status.kind, .directory, "kind of .versions")
      // The owner's write bit lets the kernel allow `rm` and `mv` out of it (docsync refuses
      // every other change itself); nobody else may remove the owner's versions.
      try c.expectEqual(status.permissions & 0o022, 0, "group and other write bits of .versions")
      try c.expectNames("/.versions", [])
    },
    ConformanceCheck("creating .versions at the root fails", "versions", requires: .docsyncRoot) {
      c in
      try c.expectError(reservedNameErrors, "create .versions with O_EXCL") {
        _ = try c.subject.open(".versions", [.write, .create, .exclusive], mode: 0o644)
      }
      try c.expectError(reservedNameErrors, "mkdir .versions") {
        try c.subject.makeDirectory(".versions", mode: 0o755)
      }
      try c.expectError(reservedNameErrors, "symlink .versions") {
        try c.subject.makeSymbolicLink(".versions", target: "x")
      }
      try c.expectError(reservedNameErrors, "mkfifo .versions") {
        try c.subject.makeNode(".versions", kind: .fifo, mode: 0o644, device: 0)
      }
      try c.writeFile("f", "x")
      try c.expectError(reservedNameErrors, "link .versions") {
        try c.subject.makeHardLink(".versions", to: c.path("f"))
      }
      try c.expectEqual(try c.stat("/.versions").kind, .directory, ".versions afterwards")
    },
    ConformanceCheck(
      "renaming anything to .versions at the root fails", "versions", requires: .docsyncRoot
    ) {
      c in
      try c.writeFile("f", "x")
      try c.mkdir("d")
      for name in ["f", "d"] {
        for flags: RenameFlags in [[], .noReplace, .exchange] {
          try c.expectError(
            reservedRenameErrors + [.invalidArgument], "rename \(name) to .versions \(flags)"
          ) {
            try c.subject.rename(c.path(name), to: ".versions", flags: flags)
          }
        }
      }
      try c.expectContent("f", "x")
      try c.expectEqual(try c.stat("d").kind, .directory, "d afterwards")
    },
    ConformanceCheck(
      "removing or renaming .versions at the root fails", "versions", requires: .docsyncRoot
    ) {
      c in
      try c.expectError(
        [.permissionDenied, .notPermitted, .readOnlyFileSystem, .resourceBusy], "rmdir .versions"
      ) { try c.subject.removeDirectory(".versions") }
      try c.expectError(
        [.permissionDenied, .notPermitted, .readOnlyFileSystem, .resourceBusy],
        "rename .versions away"
      ) { try c.subject.rename(".versions", to: c.path("v"), flags: []) }
      try c.expectEqual(try c.stat("/.versions").kind, .directory, ".versions afterwards")
    },
    ConformanceCheck(
      "creating inside .versions fails with EROFS or EACCES", "versions", requires: .docsyncRoot
    ) {
      c in
      try c.expectError(versionsWriteErrors, "create .versions/f") {
        _ = try c.subject.open(".versions/f", [.write, .create, .exclusive], mode: 0o644)
      }
      try c.expectError(versionsWriteErrors, "mkdir .versions/d") {
        try c.subject.makeDirectory(".versions/d", mode: 0o755)
      }
      try c.expectError(versionsWriteErrors, "symlink .versions/l") {
        try c.subject.makeSymbolicLink(".versions/l", target: "x")
      }
      try c.expectNames("/.versions", [])
    },
    ConformanceCheck(
      "moving a file into .versions fails with EXDEV, EROFS or EACCES", "versions",
      requires: .docsyncRoot
    ) {
      c in
      try c.writeFile("f", "x")
      try c.expectError(versionsMoveErrors, "rename f to .versions/f") {
        try c.subject.rename(c.path("f"), to: ".versions/f", flags: [])
      }
      try c.expectError(versionsMoveErrors + [.noSuchFileOrDirectory], "rename f deeper") {
        try c.subject.rename(c.path("f"), to: ".versions/" + c.path("f") + "/v", flags: [])
      }
      try c.expectContent("f", "x")
    },
  ]
}
