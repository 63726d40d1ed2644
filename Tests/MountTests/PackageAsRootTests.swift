import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The Debian package, built by `Tools/package` from the test build (a release build would
/// double the run's build time; Tools/package builds release by itself): lintian-clean, its
/// files where Debian puts them, its man pages and completions working, its maintainer
/// scripts pruning fuse.docsync from updatedb, and its user unit's commands mounting and
/// unmounting for an ordinary user.
///
/// This machine cannot run a systemd user instance (PID 1 is not systemd: `systemd --user`
/// exits at once and `systemd-run --user` finds no bus), so the unit's ExecStartPre,
/// ExecStart and ExecStopPost run here as systemd would run them: the same environment
/// (Environment=, then the environment file), the same `${VAR}` and `$$` substitutions, as the
/// test user, and stop as systemd stops it, with SIGTERM.
@Suite("The Debian package, as root", .docsyncOnly, .asRoot)
struct PackageAsRootTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path
  static let programs = [
    "bash", "dpkg-deb", "lintian", "man", "python3", "runuser", "unshare", "mount",
    "systemd-analyze",
  ]

  /// One package for the suite's tests: building it takes a while.
  static let built: Result<(package: String, folder: String), any Error> = {
    let folder = ScratchFolder.make("docsync-package")
    do {
      let result = try check(
        [
          "bash", root + "/Tools/package", "--binary", try MountFixture.docsyncBinary(), "--fast",
          "--output",
          folder,
        ], cwd: root, timeout: .seconds(600))
      let package = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
      return .success((package, folder))
    } catch {
      return .failure(error)
    }
  }()

  /// The package, unpacked into a scratch root (files) and a control folder.
  static func unpacked() throws -> (package: String, tree: String, control: String) {
    let (package, folder) = try built.get()
    let tree = folder + "/root"
    let control = folder + "/control"
    if !FileManager.default.fileExists(atPath: control) {
      try check(["dpkg-deb", "-x", package, tree])
      try check(["dpkg-deb", "-e", package, control])
    }
    return (package, tree, control)
  }

  /// LD_LIBRARY_PATH for a binary linked to the Swift runtime: the test build's RUNPATH.
  static func swiftLibraries() throws -> [String: String] {
    let dynamic = try check(["readelf", "-d", try MountFixture.docsyncBinary()]).stdout
    guard let line = dynamic.split(separator: "\n").first(where: { $0.contains("RUNPATH") }),
      let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]")
    else { return [:] }
    return ["LD_LIBRARY_PATH": String(line[line.index(after: open)..<close])]
  }

  @Test(.needs("bash", "dpkg-deb", "lintian", "man", "python3", fuse: false))
  func thePackageIsWhatDebianExpects() throws {
    try TestEnvironment.require(programs: Self.programs, fuse: false)
    let (package, tree, _) = try Self.unpacked()
    let version = try check([try MountFixture.docsyncBinary(), "--version"]).stdout
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let architecture = try check(["dpkg", "--print-architecture"]).stdout
      .trimmingCharacters(in: .whitespacesAndNewlines)
    #expect((package as NSString).lastPathComponent == "docsync_\(version)_\(architecture).deb")
    let fields = try check(["dpkg-deb", "-f", package, "Package", "Version", "Depends"]).stdout
    #expect(fields.contains("Package: docsync\n"), "\(fields)")
    #expect(fields.contains("Version: \(version)\n"), "\(fields)")
    #expect(fields.contains("Depends: fuse3, "), "\(fields)")
    #expect(fields.contains("libfuse3-3"), "\(fields)")

    let lintian = try run(["lintian", "--tag-display-limit", "0", package], timeout: .seconds(600))
    let errors = lintian.stdout.split(separator: "\n").filter { $0.hasPrefix("E:") }
    #expect(errors.isEmpty, "\(lintian)")

    for path in [
      "usr/bin/docsync", "usr/share/man/man1/docsync.1.gz", "usr/share/man/man1/docsync-mount.1.gz",
      "usr/share/man/man1/docsync-doctor.1.gz", "usr/share/man/man1/docsync-hub-init.1.gz",
      "usr/share/bash-completion/completions/docsync", "usr/share/zsh/vendor-completions/_docsync",
      "usr/share/fish/vendor_completions.d/docsync.fish", "usr/lib/systemd/user/docsync.service",
      "usr/lib/systemd/user/docsync@.service", "usr/share/doc/docsync/copyright",
      "usr/share/doc/docsync/changelog.gz", "usr/share/doc/docsync/docs/speed.md",
    ] {
      #expect(FileManager.default.fileExists(atPath: tree + "/" + path), "\(path)")
    }
    // The package's binary has no RUNPATH; a debug build finds the Swift runtime through
    // LD_LIBRARY_PATH, where the test build's RUNPATH pointed.
    let libraries = try Self.swiftLibraries()
    let packaged = try run([tree + "/usr/bin/docsync", "--version"], env: libraries)
    #expect(packaged.stdout == version + "\n", "\(libraries): \(packaged)")

    // man renders every page, and the main page lists every command with its own page.
    let pages = try FileManager.default.contentsOfDirectory(
      atPath: tree + "/usr/share/man/man1")
    #expect(pages.count >= 15, "\(pages)")
    for page in pages {
      let text = try check(
        ["man", "-l", tree + "/usr/share/man/man1/" + page], env: ["MANWIDTH": "100"]
      ).stdout
      #expect(text.contains("SYNOPSIS") && text.contains("docsync"), "\(page)")
    }
    let main = try check(
      ["man", "-l", tree + "/usr/share/man/man1/docsync.1.gz"], env: ["MANWIDTH": "200"]
    ).stdout
    for command in ["mount", "status", "versions", "doctor", "hub"] {
      #expect(main.contains("docsync-\(command)(1)"), "\(main)")
    }
    let mountPage = try check(
      ["man", "-l", tree + "/usr/share/man/man1/docsync-mount.1.gz"], env: ["MANWIDTH": "200"]
    ).stdout
    #expect(mountPage.contains("--allow-other") && mountPage.contains("--foreground"))

    // bash completes `docsync mo<TAB>` and `docsync mount --fo<TAB>`.
    let completion = tree + "/usr/share/bash-completion/completions/docsync"
    let complete = { (words: String) throws -> String in
      let script = """
        source "$1"; COMP_WORDS=(\(words)); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
        $(complete -p docsync | sed 's/.*-F \\([^ ]*\\) .*/\\1/') docsync "${COMP_WORDS[-1]}"
        printf '%s\\n' "${COMPREPLY[@]}"
        """
      return try check(["bash", "-c", script, "bash", completion]).stdout
    }
    #expect(try complete("docsync mo").split(separator: "\n").contains("mount"))
    #expect(try complete("docsync mount --fo").contains("--foreground"))

    // systemd reads both units without a complaint.
    let units = tree + "/usr/lib/systemd/user"
    let instance = try Self.built.map(\.folder).get() + "/docsync@work.service"
    try? FileManager.default.removeItem(atPath: instance)
    try FileManager.default.copyItem(atPath: units + "/docsync@.service", toPath: instance)
    for unit in [units + "/docsync.service", instance] {
      let verify = try run(["systemd-analyze", "verify", "--man=no", unit])
      #expect(verify.status == 0 && verify.stderr.isEmpty, "\(unit): \(verify)")
    }
  }

  /// postinst adds fuse.docsync to updatedb's PRUNEFS once, postrm takes it out. They run in
  /// a private mount namespace with an overlay over /etc (sed -i renames a new file over the
  /// old one, which a bind mount of the one file would refuse), so the machine's /etc stays
  /// as it is.
  @Test(.needs("dpkg-deb", "unshare", "mount", "sh", fuse: false))
  func theMaintainerScriptsPruneMountsFromUpdatedb() throws {
    try TestEnvironment.require(programs: ["dpkg-deb", "unshare", "mount", "sh"], fuse: false)
    let (_, _, control) = try Self.unpacked()
    let scratch = ScratchFolder.make("docsync-updatedb")
    for folder in ["upper", "work"] {
      try FileManager.default.createDirectory(
        atPath: scratch + "/" + folder, withIntermediateDirectories: false)
    }
    let original = """
      PRUNE_BIND_MOUNTS="yes"
      PRUNEPATHS="/tmp /var/spool"
      PRUNEFS="NFS fuse.sshfs tmpfs"

      """
    let script = """
      set -e
      mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc
      printf '%s' "$3" > /etc/updatedb.conf
      sh "$2/postinst" configure; sh "$2/postinst" configure
      cat /etc/updatedb.conf; echo ---
      sh "$2/postrm" remove
      cat /etc/updatedb.conf; echo ---
      rm /etc/updatedb.conf
      sh "$2/postinst" configure; sh "$2/postrm" purge
      test ! -e /etc/updatedb.conf
      """
    let before = FileManager.default.contents(atPath: "/etc/updatedb.conf")
    let result = try check(
      [
        "unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", scratch,
        control, original,
      ])
    let parts = result.stdout.components(separatedBy: "---\n")
    #expect(parts.count == 3, "\(result)")
    #expect(
      parts.first
        == original.replacingOccurrences(of: "PRUNEFS=\"", with: "PRUNEFS=\"fuse.docsync "),
      "\(result)")
    #expect(parts.count > 1 && parts[1] == original, "\(result)")
    #expect(FileManager.default.contents(atPath: "/etc/updatedb.conf") == before)
  }

  /// The user unit's commands, run as systemd runs them for the test user: the mount appears at
  /// the folder the environment file names, with the device it names, a file written there
  /// syncs to the hub, and SIGTERM (`systemctl --user stop`) leaves no mount behind.
  @Test(.needs("bash", "dpkg-deb", "runuser", "sh"))
  func theUserUnitMountsAndStopLeavesNoMount() throws {
    try TestEnvironment.require(programs: ["dpkg-deb", "runuser", "sh"])
    let (_, tree, _) = try Self.unpacked()
    let user = TestEnvironment.testUser
    _ = MountFixture.staleMountsCleaned  // makes the tests' root, open to every test user
    let home = "\(MountFixture.testsRoot)/\(getpid())-unit-\(UUID().uuidString.prefix(6))"
    try FileManager.default.createDirectory(
      atPath: home + "/.config/docsync",
      withIntermediateDirectories: true)
    try check(["chown", "-R", user, home])
    try check(["chmod", "0700", home])
    let folder = home + "/Synced documents"
    try "# as a person writes it\nDOCSYNC_FOLDER=\(folder)\nDOCSYNC_DEVICE=unit-test\n"
      .write(toFile: home + "/.config/docsync/docsync.env", atomically: true, encoding: .utf8)
    defer {
      _ = try? run(["fusermount3", "-uz", folder])
      try? FileManager.default.removeItem(atPath: home)
    }

    let unit = try String(
      contentsOfFile: tree + "/usr/lib/systemd/user/docsync.service", encoding: .utf8)
    let service = SystemdService(unit: unit, home: home)
    let environment = try service.environment()
    #expect(environment["DOCSYNC_FOLDER"] == folder)
    #expect(environment["DOCSYNC_DEVICE"] == "unit-test")
    let binary = try MountFixture.docsyncBinary()
    // /usr/bin/docsync is the package's; here, the test build it was made from.
    let command = { (key: String) -> [[String]] in
      service.commands(key, environment: environment).map { words in
        words.map { $0.replacingOccurrences(of: "/usr/bin/docsync", with: binary) }
      }
    }
    let asUser =
      ["runuser", "-u", user, "--", "env", "HOME=\(home)"]
      + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }

    for pre in command("ExecStartPre") { try check(asUser + pre) }
    let start = try #require(command("ExecStart").first)
    let log = home + "/unit.log"
    let started = try check(
      ["sh", "-c", "\"$@\" >\(log) 2>&1 & echo $!", "sh"] + asUser + start)
    let pid = try #require(Int32(started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
    let ready = ContinuousClock.now.advanced(by: .seconds(60))
    while !MountFixture.mountedPoints().contains(folder) && ContinuousClock.now < ready {
      usleep(100_000)
    }
    #expect(
      MountFixture.mountedPoints().contains(folder),
      "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    let status = try check(asUser + [binary, "status", folder]).stdout
    #expect(status.contains("  device:    unit-test\n"), "\(status)")
    #expect(status.contains("\(home)/.local/share/docsync/hub.sqlite"), "\(status)")
    try check(
      asUser + [
        "sh", "-c", "echo hello > \"$1/note.txt\" && \"$2\" sync \"$1\"", "sh", folder, binary,
      ])

    // df shows the disk that holds the working files: the state folder's.
    let sizes = try check(
      asUser + ["stat", "-f", "-c", "%b %S", folder, home + "/.local/share/docsync"]
    ).stdout.split(separator: "\n")
    #expect(sizes.count == 2 && sizes[0] == sizes[1], "\(sizes)")

    // systemctl --user stop: SIGTERM to the main process, then ExecStopPost.
    #expect(kill(pid, SIGTERM) == 0)
    let stopped = ContinuousClock.now.advanced(by: .seconds(60))
    while kill(pid, 0) == 0 && ContinuousClock.now < stopped { usleep(100_000) }
    #expect(kill(pid, 0) != 0, "the unit's process did not stop")
    for post in command("ExecStopPost") {
      _ = try run(asUser + post)
    }
    #expect(!MountFixture.mountedPoints().contains(folder), "a mount is left behind")
    #expect(
      (try? FileManager.default.contentsOfDirectory(atPath: folder)) == [],
      "the folder shows files without its mount")
  }
}
