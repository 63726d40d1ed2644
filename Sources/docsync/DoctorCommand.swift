import ArgumentParser
import Foundation
import Glibc
import Hub
import PostgresHub

/// `docsync doctor`: checks what this machine and this user need to mount, and prints one line
/// per check, each finding with the command that fixes it. Exit status 1 when something needs
/// fixing.
struct DoctorCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "doctor",
    abstract: "Check this machine for docsync and say what to fix, one line each.",
    discussion: """
      Checks /dev/fuse and its mode, fusermount3, user_allow_other (with --allow-other), the \
      hub (reachable, private to its owner), the state folders' modes, this machine's clock \
      against a PostgreSQL hub's server, the kernel features a mount would use (FUSE \
      passthrough, FUSE over io_uring) and whether updatedb skips mounts. Lines start with \
      ok, fix (docsync cannot work, or documents are exposed, until it is done) or note \
      (works, not as fast as it could).
      """)

  @Option(help: "The hub to check, as docsync mount takes it (default: the default SQLite hub).")
  var hub: String?

  @Option(help: "A state folder to check (default: every state folder of this user's mounts).")
  var state: [String] = []

  @Flag(help: "Also check what docsync mount --allow-other needs.")
  var allowOther = false

  func run() throws {
    var checks: [DoctorCheck] = []
    let root = geteuid() == 0
    checks.append(DoctorCheck.fuseDevice("/dev/fuse", Self.facts("/dev/fuse"), root: root))
    let candidates: [String] = ["/usr/bin/fusermount3", "/bin/fusermount3"]
    let helper = candidates.first { access($0, X_OK) == 0 }
    checks.append(DoctorCheck.fuseHelper(helper, helper.map(Self.facts), root: root))
    let configuration = "/etc/fuse.conf"
    checks.append(
      DoctorCheck.allowOther(
        configuration: configuration,
        allowed: MountCommand.fuseConfigAllowsOther(path: configuration),
        wanted: allowOther, root: root))
    checks += hubChecks()
    checks += stateChecks()
    checks += kernelChecks()
    checks.append(
      DoctorCheck.locateDatabase(
        configuration: "/etc/updatedb.conf", pruned: Self.updatedbPrunes("/etc/updatedb.conf")))
    for check in checks { writeText(check.line + "\n", to: 1) }
    let findings = checks.filter { $0.verdict == .fix }.count
    if findings > 0 {
      throw CommandFailure(
        "\(findings) thing\(findings == 1 ? "" : "s") to fix (lines starting with fix)")
    }
  }

  /// The hub's reachability and, for a SQLite hub, the modes of its file, its blob folder and
  /// the folder it is in; for a PostgreSQL hub, the connection's security and the clock.
  func hubChecks() -> [DoctorCheck] {
    let location = hub ?? SQLiteHub.defaultLocation()
    let lowered = location.lowercased()
    if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
      let postgres: PostgresLocation
      do {
        postgres = try PostgresLocation(parsing: location)
      } catch {
        return [.fix("hub: \(error.description)")]
      }
      var checks: [DoctorCheck] = []
      if let warning = postgres.warning { checks.append(.fix("hub: \(warning)")) }
      // libpq, and docsync as it does, read a password file only its owner may read.
      let environment = ProcessInfo.processInfo.environment
      let passwords =
        environment["PGPASSFILE"]
        ?? FileManager.default.homeDirectoryForCurrentUser.path + "/.pgpass"
      if Self.facts(passwords).exists {
        checks.append(DoctorCheck.privateToOwner("password file", passwords, Self.facts(passwords)))
      }
      let shown = postgres.description
      let opened: any Hub
      do {
        opened = try openAnyHub(location: location)
      } catch {
        return checks + [DoctorCheck.hubReachable(shown, problem: error.description)]
      }
      let problem = MountCommand.problemReaching(opened, shown: shown)
      checks.append(DoctorCheck.hubReachable(shown, problem: problem))
      if problem == nil, let server = opened as? PostgresHub {
        checks.append(Self.clockCheck(server))
      }
      return checks
    }
    let path = URL(fileURLWithPath: (location as NSString).expandingTildeInPath)
      .standardizedFileURL.path
    let folder = (path as NSString).deletingLastPathComponent
    var checks: [DoctorCheck] = []
    let file = Self.facts(path)
    checks.append(DoctorCheck.privateToOwner("hub", path, file))
    checks.append(
      DoctorCheck.privateToOwner("hub blob folder", path + ".blobs", Self.facts(path + ".blobs")))
    checks.append(
      DoctorCheck.privateToOwner("hub pack folder", path + ".packs", Self.facts(path + ".packs")))
    // The home folder holds much else, and its mode is the person's choice; a folder made for
    // the hub (docsync makes its default one 0700) should be as private as the hub.
    if folder != FileManager.default.homeDirectoryForCurrentUser.standardizedFileURL.path {
      checks.append(DoctorCheck.privateToOwner("hub folder", folder, Self.facts(folder)))
    }
    if file.exists {
      if access(path, R_OK | W_OK) != 0 {
        checks.append(
          .fix(
            "hub \(path) cannot be read and written by this user (\(errorText(errno))): "
              + "chown it to the user who mounts"))
      } else if let opened = try? openAnyHub(location: path) {
        checks.append(
          DoctorCheck.hubReachable(path, problem: MountCommand.problemReaching(opened, shown: path))
        )
      }
      checks.append(.ok("clock: the hub is a file on this machine, on this machine's clock"))
    } else if access(Self.existingAncestor(folder), W_OK | X_OK) != 0 {
      checks.append(
        .fix(
          "hub \(path) cannot be made: \(Self.existingAncestor(folder)) is not writable by this user"
        ))
    }
    return checks
  }

  /// Every state folder named, or else every one under `$XDG_DATA_HOME/docsync/mounts`.
  func stateChecks() -> [DoctorCheck] {
    let data = (MountCommand.defaultStateFolder(for: "/") as NSString).deletingLastPathComponent
    var folders = state.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
    if folders.isEmpty {
      let names = (try? FileManager.default.contentsOfDirectory(atPath: data)) ?? []
      folders = names.sorted().map { data + "/" + $0 }
      let top = (data as NSString).deletingLastPathComponent
      if Self.facts(top).exists {
        return [DoctorCheck.privateToOwner("docsync's data folder", top, Self.facts(top))]
          + folders.map { DoctorCheck.privateToOwner("state folder", $0, Self.facts($0)) }
      }
      return [.ok("state folders: none yet (\(data))")]
    }
    return folders.map { DoctorCheck.privateToOwner("state folder", $0, Self.facts($0)) }
  }

  func kernelChecks() -> [DoctorCheck] {
    var name = utsname()
    uname(&name)
    let release = withUnsafeBytes(of: name.release) {
      String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
    }
    let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
    let kernel = numbers.count == 2 ? (major: numbers[0], minor: numbers[1]) : nil
    let parameter = "/sys/module/fuse/parameters/enable_uring"
    let value = readTextFile(parameter)?.trimmingCharacters(in: .whitespacesAndNewlines)
    return [
      DoctorCheck.passthrough(kernel: kernel, release: release, admin: Self.hasSysAdmin()),
      DoctorCheck.ioUring(parameter: parameter, value: value, release: release),
    ]
  }

  /// Measures this machine's clock against the server's: the server's time against the middle
  /// of the round trip, the best of three.
  static func clockCheck(_ server: PostgresHub) -> DoctorCheck {
    let samples: [(skew: Double, uncertainty: Double)?] = (0..<3).map { _ in
      waitFor { () async -> (skew: Double, uncertainty: Double)? in
        let before = Date().timeIntervalSince1970
        guard let there = try? await server.serverClock() else { return nil }
        let after = Date().timeIntervalSince1970
        return (skew: (before + after) / 2 - there, uncertainty: (after - before) / 2)
      }
    }
    guard let best = samples.compactMap({ $0 }).min(by: { $0.uncertainty < $1.uncertainty })
    else { return .note("clock: not measured: the hub's server did not say its time") }
    return DoctorCheck.clock(skew: best.skew, uncertainty: best.uncertainty)
  }

  static func facts(_ path: String) -> DoctorCheck.PathFacts {
    var info = stat()
    guard stat(path, &info) == 0 else { return DoctorCheck.PathFacts(exists: false) }
    let owner =
      getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "\(info.st_uid)"
    return DoctorCheck.PathFacts(
      exists: true,
      isCharacterDevice: info.st_mode & S_IFMT == S_IFCHR,
      isDirectory: info.st_mode & S_IFMT == S_IFDIR,
      mode: UInt32(info.st_mode),
      owner: owner,
      setUserIDRoot: info.st_uid == 0 && info.st_mode & S_ISUID != 0,
      usable: access(path, R_OK | W_OK) == 0)
  }

  /// The nearest folder at or above `path` that exists.
  static func existingAncestor(_ path: String) -> String {
    var current = path
    while !current.isEmpty && current != "/" && !facts(current).exists {
      current = (current as NSString).deletingLastPathComponent
    }
    return current.isEmpty ? "/" : current
  }

  /// Whether this process has CAP_SYS_ADMIN in its effective set (bit 21 of CapEff).
  static func hasSysAdmin() -> Bool {
    guard let status = readTextFile("/proc/self/status") else { return geteuid() == 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("CapEff:") {
      let hex = line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces)
      guard let bits = UInt64(hex, radix: 16) else { return false }
      return bits & (1 << 21) != 0
    }
    return false
  }

  /// Whether updatedb's configuration prunes fuse.docsync (nil when there is none).
  static func updatedbPrunes(_ path: String) -> Bool? {
    guard let text = readTextFile(path) else { return nil }
    for line in text.split(separator: "\n") {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      guard trimmed.hasPrefix("PRUNEFS") else { continue }
      let value = trimmed.split(separator: "=", maxSplits: 1).last ?? ""
      let types = value.replacingOccurrences(of: "\"", with: "").split(separator: " ")
      if types.contains(where: { $0.lowercased() == "fuse.docsync" }) { return true }
    }
    return false
  }
}
