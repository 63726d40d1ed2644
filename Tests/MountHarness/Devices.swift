import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What `docsync status --json` reports for one mount.
public struct DeviceStatus: Decodable, Sendable {
  public struct Conflict: Decodable, Sendable, Equatable {
    public var path: String
    public var versions: Int
  }
  public var mountPoint: String
  public var device: String
  public var deviceID: String
  public var hub: String
  public var state: String
  /// Why this device cannot sync, when `state` is `cannot sync`.
  public var cannotSyncReason: String?
  public var pendingUploads: Int
  public var lastSync: String?
  public var conflicts: [Conflict]
  /// Paths and conflict versions whose content is not here yet, and why.
  public var waiting: [Waiting]?
  /// Paths with a version that cannot be uploaded (its content cannot be read here).
  public var heldBack: [String]?
  /// Bytes of content this run of the daemon put on the hub and fetched from it, as stored.
  public var contentBytesSent: UInt64?
  public var contentBytesReceived: UInt64?

  public struct Waiting: Decodable, Sendable, Equatable {
    public var path: String
    public var version: String?
    public var reason: String

    public init(path: String, version: String?, reason: String) {
      self.path = path
      self.version = version
      self.reason = reason
    }
  }
}

/// One device of a `Library`: a docsync mount with its own state folder on the library's hub.
public final class Device {
  public let name: String
  public let mountPoint: String
  public let state: String
  public let hub: String
  /// Variables set for every docsync command this device runs (the daemon inherits them from
  /// `docsync mount`), e.g. `PGPASSWORD` for a PostgreSQL hub.
  public let environment: [String: String]
  /// The account whose mount this is, when the test (as root) mounts for another user; nil:
  /// the test's own.
  public let user: String?
  /// Options added to `docsync mount` (`--allow-other`).
  public let mountOptions: [String]
  /// The umask `docsync mount` runs with, when not the test's own.
  public let umask: mode_t?
  public private(set) var isMounted = false

  fileprivate init(
    name: String, base: String, hub: String, environment: [String: String] = [:],
    user: String? = nil, mountOptions: [String] = [], umask: mode_t? = nil
  ) throws {
    self.name = name
    self.hub = hub
    self.environment = environment
    self.user = user
    self.mountOptions = mountOptions
    self.umask = umask
    mountPoint = "\(base)/\(name)/mnt"
    state = "\(base)/\(name)/state"
    // Other users reach an `--allow-other` mount through these folders; the state stays private.
    try MountFixture.makePrivateFolder("\(base)/\(name)", mode: 0o711)
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    try MountFixture.makePrivateFolder(state)
    if let user { try check(["chown", "-R", "\(user):", "\(base)/\(name)"]) }
  }

  /// `argv` as this device's user: through `runuser` when the mount is another user's.
  public func asOwner(_ argv: [String]) -> [String] {
    guard let user else { return argv }
    return ["runuser", "-u", user, "--"] + argv
  }

  /// Runs `script` with `sh -c` in this device's mount, as the mount's owner.
  @discardableResult
  public func shell(_ script: String, _ arguments: String...) throws -> RunResult {
    try run(asOwner(["sh", "-c", script, "sh"] + arguments), cwd: mountPoint)
  }

  public func path(_ relative: String) -> String { "\(mountPoint)/\(relative)" }

  /// `docsync mount`: what it printed (a warning, say) once the mount is in place.
  @discardableResult
  public func mount() throws -> RunResult {
    var argv = [
      try MountFixture.docsyncBinary(), "mount", mountPoint, "--state", state, "--hub", hub,
      "--device", name,
    ]
    if let umask {
      argv = ["sh", "-c", "umask \(String(umask, radix: 8)) && exec \"$@\"", "sh"] + argv
    }
    let result = try run(asOwner(argv + mountOptions), env: environment, timeout: .seconds(60))
    guard result.status == 0 else {
      throw RunError(description: "docsync mount (\(name)) failed: \(result)\n\(logTail())")
    }
    guard MountFixture.mountedPoints().contains(mountPoint) else {
      throw RunError(description: "docsync mount exited 0 but \(mountPoint) is not mounted")
    }
    isMounted = true
    return result
  }

  public func unmount() throws {
    guard isMounted else { return }
    isMounted = false
    let argv = asOwner([try MountFixture.docsyncBinary(), "unmount", mountPoint])
    var result = try run(argv, env: environment, timeout: .seconds(60))
    // Parallel tests spawn programs that can inherit, for a moment, a descriptor this test
    // had open in its mount; the mount is busy until that child exits.
    var attempts = 0
    while result.status != 0 && result.stderr.contains("busy") && attempts < 40 {
      usleep(250_000)
      attempts += 1
      result = try run(argv, env: environment, timeout: .seconds(60))
    }
    if result.status != 0 || MountFixture.mountedPoints().contains(mountPoint) {
      MountFixture.forceUnmount(mountPoint)
      throw RunError(description: "docsync unmount (\(name)) failed: \(result)\n\(logTail())")
    }
  }

  /// `kill -9` the daemon and `fusermount3 -uz` its dead mount.
  public func crash() throws {
    let pid = try daemonPID()
    guard kill(pid, SIGKILL) == 0 else {
      throw RunError(description: "kill -9 \(pid): \(String(cString: strerror(errno)))")
    }
    for _ in 0..<500 where kill(pid, 0) == 0 { usleep(10_000) }
    if kill(pid, 0) == 0 {
      // Still there: a thread of the killed daemon can wait, unkillably, for the answer to a
      // call through its own mount, or for a folder's lock that another call holds while it
      // waits for the dead daemon. `docsync unmount` is a person's way out (it aborts the
      // connection of such a process, StuckDaemonTests); it must work here too.
      let result = try run(
        asOwner([try MountFixture.docsyncBinary(), "unmount", mountPoint]), env: environment,
        timeout: .seconds(60))
      guard result.status == 0 else {
        MountFixture.abortConnection(of: mountPoint)
        throw RunError(description: "docsync unmount after kill -9 (\(name)): \(result)")
      }
    }
    MountFixture.forceUnmount(mountPoint)
    isMounted = false
  }

  public func daemonPID() throws -> pid_t {
    let text = try String(contentsOfFile: "\(state)/docsync.pid", encoding: .utf8)
    guard let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
      throw RunError(description: "docsync.pid holds \(text.debugDescription)")
    }
    return pid
  }

  /// The daemon's peak resident memory so far (VmHWM), in MiB.
  public func peakMemoryMiB() throws -> Double {
    let status = try String(contentsOfFile: "/proc/\(try daemonPID())/status", encoding: .utf8)
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
      let kib = Double(line.split(separator: " ", omittingEmptySubsequences: true)[1])
    else { throw RunError(description: "no VmHWM in /proc/PID/status") }
    return kib / 1024
  }

  /// `docsync sync`: returns once this mount is up to date with the hub.
  public func sync(timeout seconds: Int = 30) throws {
    try command(["sync", mountPoint, "--timeout", "\(seconds)"], timeout: seconds + 30)
  }

  /// `docsync sync` without the expectation that it succeeds.
  public func trySync(timeout seconds: Int = 30) throws -> RunResult {
    try run(
      asOwner([try MountFixture.docsyncBinary(), "sync", mountPoint, "--timeout", "\(seconds)"]),
      env: environment, timeout: .seconds(seconds + 30))
  }

  public func pause() throws { try command(["pause", mountPoint]) }
  public func resume() throws { try command(["resume", mountPoint]) }

  public func status() throws -> DeviceStatus {
    let result = try command(["status", mountPoint, "--json"])
    do {
      return try JSONDecoder().decode(DeviceStatus.self, from: Data(result.stdout.utf8))
    } catch {
      throw RunError(description: "docsync status --json (\(name)): \(error)\n\(result.stdout)")
    }
  }

  @discardableResult
  private func command(_ arguments: [String], timeout: Int = 60) throws -> RunResult {
    let result = try run(
      asOwner([try MountFixture.docsyncBinary()] + arguments), env: environment,
      timeout: .seconds(timeout))
    guard result.status == 0, !result.timedOut else {
      throw RunError(description: "device \(name): \(result)\n\(logTail())")
    }
    return result
  }

  /// Every file under `.versions`, relative to it, sorted: each open conflict version.
  public func versionFiles() throws -> [String] {
    let root = path(".versions")
    guard let walker = FileManager.default.enumerator(atPath: root) else {
      throw RunError(description: "cannot list \(root)")
    }
    var files: [String] = []
    while let relative = walker.nextObject() as? String {
      if try describe("\(root)/\(relative)").kind == .file { files.append(relative) }
    }
    return files.sorted()
  }

  public func log() -> String {
    (try? String(contentsOfFile: "\(state)/docsync.log", encoding: .utf8)) ?? ""
  }

  public func logTail(_ lines: Int = 30) -> String {
    "docsync.log of \(name) (tail):\n"
      + log().split(separator: "\n").suffix(lines).joined(separator: "\n")
  }
}

/// Several devices of one library: mounts that share one hub (by default a SQLite hub file),
/// each with its own state folder, in `/var/tmp/docsync-tests/<pid>-<random>/`.
public final class Library {
  public let base: String
  public let hub: String
  /// Variables every device's docsync commands run with (`PGPASSWORD` for PostgreSQL).
  public let hubEnvironment: [String: String]
  /// The account every device mounts as, when the test (as root) acts for another user.
  public let user: String?
  private var hubCleanup: (() -> Void)?
  public private(set) var devices: [Device] = []

  private init(hub kind: LibraryHub, user: String?) throws {
    _ = MountFixture.staleMountsCleaned
    self.user = user
    base = "\(MountFixture.testsRoot)/\(getpid())-\(UUID().uuidString.prefix(8).lowercased())"
    try MountFixture.makePrivateFolder(base, mode: 0o711)
    if let user { try check(["chown", "\(user):", base]) }
    switch kind {
    case .sqlite:
      // In a folder docsync makes, so that what it makes of a new hub's folder shows.
      hub = "\(base)/hub/hub.sqlite"
      hubEnvironment = [:]
    case .postgres:
      let account = try TestPostgres.newAccount()
      hub = account.url
      hubEnvironment = account.environment
      hubCleanup = account.cleanup
    case .location(let url, let environment):
      hub = url
      hubEnvironment = environment
    }
  }

  /// Runs `body` with an empty library and unmounts every device afterwards, also on failure.
  ///
  /// With `user` (the test runs as root), every device is that user's mount: its folders are
  /// theirs and every docsync command runs through `runuser`.
  public static func with<R>(
    programs: [String] = [], hub: LibraryHub? = nil, user: String? = nil,
    _ body: (Library) throws -> R
  ) throws -> R {
    try TestEnvironment.require(programs: programs)
    let library = try Library(hub: hub ?? LibraryHub.current, user: user)
    defer { library.tearDown() }
    do {
      return try body(library)
    } catch {
      // The daemons' own account is what explains a sync that went wrong.
      Issue.record("logs at failure:\n\(library.logTails())")
      throw error
    }
  }

  /// The device called `name`, mounted on first use, with `options` added to `docsync mount`
  /// and, if given, the umask it runs with.
  @discardableResult
  public func device(
    _ name: String, options: [String] = [], umask: mode_t? = nil,
    environment: [String: String] = [:]
  ) throws -> Device {
    if let existing = devices.first(where: { $0.name == name }) { return existing }
    let device = try Device(
      name: name, base: base, hub: hub,
      environment: hubEnvironment.merging(environment) { _, new in new }, user: user,
      mountOptions: options, umask: umask)
    devices.append(device)
    try device.mount()
    return device
  }

  /// `docsync sync` on each device in turn.
  public func sync(_ order: Device...) throws {
    for device in order { try device.sync() }
  }

  public func logTails() -> String {
    devices.map { $0.logTail() }.joined(separator: "\n")
  }

  private func tearDown() {
    for device in devices where device.isMounted {
      do { try device.unmount() } catch { Issue.record(error, "while unmounting \(device.name)") }
    }
    hubCleanup?()
    // Removing a folder that is still mounted would delete through the mount.
    guard !MountFixture.mountedPoints().contains(where: { $0.hasPrefix(base + "/") }) else {
      return
    }
    if TestEnvironment.variables["DOCSYNC_MOUNTTESTS_KEEP"] != "1" {
      try? FileManager.default.removeItem(atPath: base)
    }
  }
}

/// A process left running while the test goes on, whose stdin is a FIFO the test writes to
/// when the process should continue.
public final class BackgroundProcess {
  public let pid: pid_t
  private let folder: String
  private var input: Int32 = -1
  private var finished = false
  private var exitStatus: Int32?

  public var stdoutPath: String { "\(folder)/stdout" }

  public init(_ argv: [String], cwd: String? = nil) throws {
    folder =
      FileManager.default.temporaryDirectory
      .appendingPathComponent("docsync-bg-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let fifo = "\(folder)/stdin"
    guard mkfifo(fifo, 0o600) == 0 else {
      throw RunError(description: "mkfifo: \(String(cString: strerror(errno)))")
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    // O_RDWR so that the child's open does not wait for the test to open the other end.
    posix_spawn_file_actions_addopen(&actions, 0, fifo, O_RDWR, 0)
    posix_spawn_file_actions_addopen(
      &actions, 1, "\(folder)/stdout", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(
      &actions, 2, "\(folder)/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    // As in `run`: no other test's descriptors, which would keep its mount busy.
    closeDescriptorsAboveStderr(&actions)
    let full = ["/usr/bin/env"] + (cwd.map { ["-C", $0] } ?? []) + argv
    let cArgv = full.map { strdup($0) } + [nil]
    let cEnv = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (cArgv + cEnv).forEach { free($0) } }
    // The test runner's threads block signals, and a child inherits the mask: without this,
    // SIGTERM would not end a background program.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var unblocked = sigset_t()
    sigemptyset(&unblocked)
    posix_spawnattr_setsigmask(&attributes, &unblocked)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
    var child = pid_t()
    let spawned = posix_spawn(&child, "/usr/bin/env", &actions, &attributes, cArgv, cEnv)
    guard spawned == 0 else {
      throw RunError(description: "posix_spawn \(argv): \(String(cString: strerror(spawned)))")
    }
    pid = child
    // O_RDWR too: a child that died before opening the FIFO must not block the test here.
    input = open(fifo, O_RDWR | O_CLOEXEC)
  }

  deinit {
    if !finished {
      kill(pid, SIGKILL)
      var status: Int32 = 0
      waitpid(pid, &status, 0)
    }
    if input >= 0 { close(input) }
    try? FileManager.default.removeItem(atPath: folder)
  }

  public var output: String {
    (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? ""
  }

  /// Waits until the process has printed `text`, or fails after `timeout`.
  public func waitForOutput(_ text: String, timeout: Duration = .seconds(20)) throws {
    let deadline = ContinuousClock.now + timeout
    while !output.contains(text) {
      guard ContinuousClock.now < deadline else {
        let errors = (try? String(contentsOfFile: "\(folder)/stderr", encoding: .utf8)) ?? ""
        throw RunError(description: "no \(text.debugDescription) from \(pid): \(output) \(errors)")
      }
      usleep(10_000)
    }
  }

  public func send(_ line: String) throws {
    let bytes = Array((line + "\n").utf8)
    guard Glibc.write(input, bytes, bytes.count) == bytes.count else {
      throw RunError(description: "write to stdin of \(pid): \(String(cString: strerror(errno)))")
    }
  }

  /// Waits for the exit and returns the exit status.
  public func wait(timeout: Duration = .seconds(30)) throws -> Int32 {
    let deadline = ContinuousClock.now + timeout
    while isRunning {
      guard ContinuousClock.now < deadline else {
        throw RunError(description: "process \(pid) did not exit")
      }
      usleep(5_000)
    }
    return exitStatus ?? 0
  }

  /// Whether the process has not exited yet (once it has, ``wait(timeout:)`` returns its
  /// status at once).
  public var isRunning: Bool {
    if exitStatus != nil { return false }
    var status: Int32 = 0
    guard waitpid(pid, &status, WNOHANG) == pid else { return true }
    finished = true
    exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return false
  }
}
