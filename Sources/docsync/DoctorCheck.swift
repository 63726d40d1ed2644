/// One line of `docsync doctor`: what was checked and, when something needs fixing, the fix.
///
/// The static functions decide from facts that ``DoctorCommand`` gathered; they do no I/O, so
/// every verdict (and the fix it names) is the same for the same machine.
struct DoctorCheck: Equatable {
  enum Verdict: String {
    /// Nothing to do.
    case ok
    /// Something stops docsync or exposes documents: the line names the fix.
    case fix
    /// Works, but not as well as it could; the line says why.
    case note
  }

  var verdict: Verdict
  var text: String

  /// The line as `docsync doctor` prints it: the verdict in a column of its own, then the text.
  var line: String {
    verdict.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0) + text
  }

  static func ok(_ text: String) -> DoctorCheck { DoctorCheck(verdict: .ok, text: text) }
  static func fix(_ text: String) -> DoctorCheck { DoctorCheck(verdict: .fix, text: text) }
  static func note(_ text: String) -> DoctorCheck { DoctorCheck(verdict: .note, text: text) }

  /// What `stat` and `access` said about a path.
  struct PathFacts: Equatable {
    var exists: Bool
    var isCharacterDevice = false
    var isDirectory = false
    var mode: UInt32 = 0
    var owner = ""
    var setUserIDRoot = false
    /// Whether this user could open it for reading and writing (`access(R_OK | W_OK)`).
    var usable = false
  }

  static func octal(_ mode: UInt32) -> String {
    let digits = String(mode & 0o7777, radix: 8)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
  }

  /// `/dev/fuse`: every FUSE mount starts by opening it.
  static func fuseDevice(_ path: String, _ facts: PathFacts, root: Bool = false) -> DoctorCheck {
    guard facts.exists else {
      return .fix("\(path) is missing: as root, modprobe fuse (and apt-get install fuse3)")
    }
    guard facts.isCharacterDevice else {
      return .fix(
        "\(path) is not a character device: as root, rm \(path) && mknod -m 0666 \(path) c 10 229")
    }
    guard facts.usable else {
      return .fix(
        "\(path) is mode \(octal(facts.mode)) (owner \(facts.owner)), so this user cannot open it: "
          + "as root, chmod 0666 \(path) (Debian's udev rules make it 0666)")
    }
    if root && facts.mode & 0o006 != 0o006 {
      return .note(
        "\(path) is mode \(octal(facts.mode)): root can open it, ordinary users cannot: "
          + "chmod 0666 \(path) lets them mount (Debian's udev rules make it 0666)")
    }
    return .ok("\(path): mode \(octal(facts.mode)), this user can open it")
  }

  /// `fusermount3`: an ordinary user mounts and unmounts through this set-user-id helper.
  static func fuseHelper(_ path: String?, _ facts: PathFacts?, root: Bool) -> DoctorCheck {
    guard let path, let facts, facts.exists else {
      return .fix("fusermount3 is missing: as root, apt-get install fuse3")
    }
    if !root && !facts.setUserIDRoot {
      return .fix(
        "\(path) is not set-user-id root, so it cannot mount for an ordinary user: "
          + "as root, apt-get install --reinstall fuse3")
    }
    return .ok("\(path): present\(root ? "" : ", set-user-id root")")
  }

  /// `user_allow_other` in /etc/fuse.conf: needed only by an ordinary user's `--allow-other`.
  static func allowOther(
    configuration: String, allowed: Bool, wanted: Bool, root: Bool
  ) -> DoctorCheck {
    if !wanted {
      return .ok(
        "\(configuration): user_allow_other not needed (mounts are private; "
          + "docsync doctor --allow-other checks what --allow-other needs)")
    }
    if root || allowed {
      return .ok("\(configuration): --allow-other can be used")
    }
    return .fix(
      "--allow-other needs user_allow_other in \(configuration): "
        + "as root, echo user_allow_other >> \(configuration)")
  }

  /// A file or folder that holds documents (a hub, its blobs, a state folder): only its owner
  /// may read it.
  static func privateToOwner(_ what: String, _ path: String, _ facts: PathFacts) -> DoctorCheck {
    guard facts.exists else { return .ok("\(what) \(path): not made yet") }
    if facts.mode & 0o077 != 0 {
      return .fix(
        "\(what) \(path) is mode \(octal(facts.mode)): other users of this machine may read "
          + "its documents; chmod go-rwx \(path)")
    }
    return .ok("\(what) \(path): mode \(octal(facts.mode)), private")
  }

  /// The hub answered a read (nil problem), or why it did not.
  static func hubReachable(_ shown: String, problem: String?) -> DoctorCheck {
    guard let problem else { return .ok("hub \(shown): reachable") }
    return .fix("hub \(shown) cannot be read: \(problem)")
  }

  /// This device's clock against the PostgreSQL server's, with the measurement's uncertainty
  /// (half the round trip). Other devices refuse records more than a day ahead of their own
  /// clocks; between concurrent edits, the later time wins.
  static func clock(skew: Double, uncertainty: Double) -> DoctorCheck {
    let shown = String(format: "%.1f s", abs(skew))
    let margin = String(format: "±%.2f s", uncertainty)
    if abs(skew) - uncertainty > 60 {
      let direction = skew > 0 ? "ahead of" : "behind"
      return .fix(
        "clock: this machine is \(shown) \(direction) the hub's server (\(margin)): "
          + "turn on time sync (as root, apt-get install systemd-timesyncd)")
    }
    return .ok("clock: within \(shown) of the hub's server (\(margin))")
  }

  /// FUSE passthrough: reads and writes go straight to the working file, with no request to
  /// the daemon. The kernel lets only a process with CAP_SYS_ADMIN register backing files.
  static func passthrough(kernel: (major: Int, minor: Int)?, release: String, admin: Bool)
    -> DoctorCheck
  {
    guard let kernel, kernel >= (6, 9) else {
      return .note(
        "FUSE passthrough: not available: Linux \(release) is older than 6.9; "
          + "reads and writes go through the daemon")
    }
    guard admin else {
      return .note(
        "FUSE passthrough: not used: it needs CAP_SYS_ADMIN, which a mount by an ordinary "
          + "user does not have; reads and writes go through the daemon (docs/speed.md)")
    }
    return .ok("FUSE passthrough: used (Linux \(release), CAP_SYS_ADMIN)")
  }

  /// FUSE over io_uring: the kernel passes requests over rings when the fuse module's
  /// `enable_uring` is on (Linux 6.14 and later).
  static func ioUring(parameter: String, value: String?, release: String) -> DoctorCheck {
    guard let value else {
      return .note(
        "FUSE over io_uring: not available: Linux \(release) has no \(parameter) (needs 6.14 "
          + "and the fuse module loaded); requests go through /dev/fuse")
    }
    if value.hasPrefix("Y") || value.hasPrefix("1") {
      return .ok("FUSE over io_uring: on (\(parameter) is \(value))")
    }
    return .note(
      "FUSE over io_uring: off, requests go through /dev/fuse: "
        + "as root, echo Y > \(parameter) turns it on")
  }

  /// Whether `updatedb` (plocate, mlocate) leaves mounts alone: their type is fuse.docsync.
  static func locateDatabase(configuration: String, pruned: Bool?) -> DoctorCheck {
    guard let pruned else {
      return .ok("\(configuration): absent (no updatedb to walk the mounts)")
    }
    if pruned { return .ok("\(configuration): updatedb skips fuse.docsync mounts") }
    return .note(
      "\(configuration): updatedb walks docsync mounts it can enter: add fuse.docsync to "
        + "PRUNEFS (the docsync package does)")
  }
}
