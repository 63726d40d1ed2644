import ArgumentParser
import DocumentFileSystem
import DocumentModel
import Foundation
import FuseLowLevel
import FuseMount
import Glibc
import Hub
import LocalStore
import Logging
import PostgresHub
import SyncEngine
import Synchronization

/// `docsync mount`: checks everything a person can get wrong, then serves the mount from a
/// background process and returns once the mount is ready (or serves it here with
/// `--foreground`).
struct MountCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "mount", abstract: "Mount the synced folder at MOUNTPOINT.")

  @Argument(help: "An existing, empty folder to show the documents in.")
  var mountPoint: String

  @Option(help: "The folder that keeps this mount's local state.")
  var state: String?

  @Flag(help: "Serve the mount in this process until it is unmounted or SIGTERM arrives.")
  var foreground = false

  @Flag(help: "Let other users use the mount, with the kernel's permission checks.")
  var allowOther = false

  @Option(
    help: "The hub: a SQLite file (created when missing) or postgres://USER@HOST:PORT/DATABASE.")
  var hub: String?

  @Option(help: "This device's name as people read it in .versions (default: the host name).")
  var device: String?

  @Option(
    help: """
      How much to log: trace, debug, info (one line per sync event), notice, warning, error. \
      The log goes to stderr with --foreground, to STATE/docsync.log otherwise.
      """)
  var logLevel: Logger.Level = .info

  @Flag(
    help:
      "Do not show desktop notifications (a document gets a conflict; syncing fails on this device)."
  )
  var noNotify = false

  @Flag(help: .hidden)
  var daemon = false

  /// For developers: libfuse prints every request and reply to the log.
  @Flag(help: .hidden)
  var fuseDebug = false

  /// For tests and benchmarks: every read and write comes as a request, as it does for a user
  /// without CAP_SYS_ADMIN, even where the kernel could pass them through to working files.
  @Flag(help: .hidden)
  var noPassthrough = false

  @Flag(
    help: """
      Take every FUSE request from /dev/fuse, even where the kernel offers FUSE over io_uring \
      (the fuse module's enable_uring).
      """)
  var noIoUring = false

  func validate() throws {
    // Other devices refuse records whose device name breaks these bounds (RecordCheck).
    if let device,
      device.utf8.count > RecordCheck.maximumDeviceNameBytes
        || device.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F })
    {
      throw ValidationError(
        "--device: a name of at most \(RecordCheck.maximumDeviceNameBytes) bytes without "
          + "control characters")
    }
  }

  func run() throws {
    if daemon { closeInheritedDescriptors() }
    logLevelSetting.withLock { $0 = logLevel }
    let target = try checkedMountPoint()
    let stateFolder = try preparedStateFolder(for: target)
    // Before anything logs: the starter, which reads stderr until the mount is ready, drops
    // what is not a warning.
    if daemon { _ = LogOutput.append(to: stateFolder + "/docsync.log") }
    try checkFuseDevice()
    if !daemon { try checkFuseHelper() }
    if foreground || daemon {
      try serve(mountPoint: target, state: stateFolder)
    } else {
      try startDaemon(mountPoint: target, state: stateFolder)
    }
  }

  func checkedMountPoint() throws -> String {
    var info = stat()
    guard stat(mountPoint, &info) == 0 else {
      if errno == ENOENT { throw CommandFailure("mount point \(mountPoint) does not exist") }
      throw CommandFailure("cannot use mount point \(mountPoint): \(errorText(errno))")
    }
    guard info.st_mode & S_IFMT == S_IFDIR else {
      throw CommandFailure("mount point \(mountPoint) is not a directory")
    }
    guard let resolved = resolvedPath(mountPoint) else {
      throw CommandFailure("cannot use mount point \(mountPoint): \(errorText(errno))")
    }
    if let existing = MountTable.record(at: resolved) {
      if let state = existing.docsyncState {
        throw CommandFailure("\(resolved) is already a docsync mount (state folder \(state))")
      }
      throw CommandFailure("\(resolved) is already mounted (\(existing.type))")
    }
    // FUSE would mount over the files and hide them until the unmount: refuse instead.
    guard let folder = opendir(resolved) else {
      throw CommandFailure("cannot read mount point \(resolved): \(errorText(errno))")
    }
    defer { closedir(folder) }
    while let entry = readdir(folder) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) {
        String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
      }
      if name != "." && name != ".." {
        throw CommandFailure(
          "mount point \(resolved) is not empty: mount on an empty folder, so that nothing in it is hidden"
        )
      }
    }
    return resolved
  }

  func preparedStateFolder(for target: String) throws -> String {
    // Absolute first: the folders are made one component at a time from the root, and the
    // daemon must find the same folder from wherever it runs.
    let folder = URL(fileURLWithPath: state ?? Self.defaultStateFolder(for: target))
      .standardizedFileURL.path
    var path = ""
    for component in folder.split(separator: "/") {
      path += "/" + component
      if mkdir(path, 0o700) != 0 && errno != EEXIST {
        throw CommandFailure("state folder \(folder) is not writable: \(errorText(errno))")
      }
    }
    var info = stat()
    guard stat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
      throw CommandFailure("state folder \(folder) is not writable: it is not a directory")
    }
    guard access(folder, W_OK | X_OK) == 0 else {
      throw CommandFailure("state folder \(folder) is not writable: \(errorText(errno))")
    }
    guard let resolved = resolvedPath(folder) else {
      throw CommandFailure("state folder \(folder) is not usable: \(errorText(errno))")
    }
    return resolved
  }

  static func hostName() -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return "device" }
    return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
  }

  /// `$XDG_DATA_HOME/docsync/mounts/<mount point with / as %2F>`.
  static func defaultStateFolder(for target: String) -> String {
    let environment = { (name: String) -> String? in getenv(name).map { String(cString: $0) } }
    let data =
      environment("XDG_DATA_HOME").flatMap { $0.isEmpty ? nil : $0 }
      ?? ((environment("HOME") ?? "/root") + "/.local/share")
    let escaped = target.replacingAll("%", with: "%25").replacingAll("/", with: "%2F")
    return data + "/docsync/mounts/" + escaped
  }

  func checkFuseDevice() throws {
    // DOCSYNC_FUSE_DEVICE lets tests check this message without removing /dev/fuse.
    let device = getenv("DOCSYNC_FUSE_DEVICE").map { String(cString: $0) } ?? "/dev/fuse"
    var info = stat()
    guard stat(device, &info) == 0 else {
      throw CommandFailure(
        "\(device) is missing (\(errorText(errno))): install fuse3 and load the fuse module (modprobe fuse)"
      )
    }
    guard access(device, R_OK | W_OK) == 0 else {
      let reason = errorText(errno)
      let mode = String(format: "%04o", info.st_mode & 0o7777)
      let owner =
        getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "\(info.st_uid)"
      throw CommandFailure(
        "\(device) is mode \(mode), owned by \(owner), and this user cannot open it (\(reason)): "
          + "an administrator makes it usable with chmod 0666 \(device), as Debian's udev rules do"
      )
    }
  }

  /// An ordinary user mounts through the set-user-id helper `fusermount3`, which fuse3
  /// installs; `--allow-other` needs the administrator's leave in /etc/fuse.conf.
  func checkFuseHelper() throws {
    guard geteuid() != 0 else { return }
    let candidates: [String] = ["/usr/bin/fusermount3", "/bin/fusermount3"]
    let helper = candidates.first { access($0, X_OK) == 0 }
    guard let helper else {
      throw CommandFailure(
        "fusermount3 is missing: an ordinary user mounts through it; install fuse3")
    }
    var info = stat()
    if stat(helper, &info) == 0 && (info.st_mode & S_ISUID == 0 || info.st_uid != 0) {
      throw CommandFailure(
        "\(helper) is not set-user-id root, so it cannot mount for an ordinary user: reinstall fuse3"
      )
    }
    if allowOther && !Self.fuseConfigAllowsOther() {
      throw CommandFailure(
        "--allow-other needs the line user_allow_other in /etc/fuse.conf, which only an administrator can add"
      )
    }
  }

  /// Whether /etc/fuse.conf has an uncommented `user_allow_other`.
  static func fuseConfigAllowsOther(path: String = "/etc/fuse.conf") -> Bool {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return false }
    return text.split(separator: "\n").contains {
      $0.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first?
        .trimmingCharacters(in: .whitespaces) == "user_allow_other"
    }
  }

  /// Opens the state in `folder`; a damaged one is set aside first and a new one started,
  /// which the hub fills again (``recoverDamagedStates(in:store:hub:problem:)``).
  static func openStore(_ folder: String) throws -> LocalStore {
    LocalStore.finishSettingAside(directory: folder)
    do {
      return try LocalStore(directory: folder)
    } catch .damaged(let path, let reason) {
      let aside: SetAsideState
      do {
        aside = try LocalStore.setAside(directory: folder)
      } catch {
        throw CommandFailure(
          "the state database \(path) is damaged (\(reason)) and cannot be set aside: \(error)")
      }
      writeText(
        "docsync: warning: the state database \(path) is damaged (\(reason)); it is set aside "
          + "in \(aside.path), and the files come back from the hub (docsync sync waits for "
          + "them)\n", to: 2)
      do {
        return try LocalStore(directory: folder)
      } catch {
        throw CommandFailure(error.description)
      }
    } catch {
      throw CommandFailure(error.description)
    }
  }

  /// Sends the hub what each damaged state set aside in `folder` had not sent yet, before the
  /// new state syncs; refuses the mount while the hub is unreachable (`problem`), since the
  /// new state would show a folder without them, and the next mount tries again.
  static func recoverDamagedStates(
    in folder: String, store: LocalStore, hub: any Hub, problem: String?
  ) throws {
    let pending = LocalStore.statesToRecover(in: folder)
    guard !pending.isEmpty else { return }
    if let problem {
      throw CommandFailure(
        "the state in \(folder) was damaged and is rebuilt from the hub, which cannot be "
          + "reached now (\(problem)); mount again once it can (nothing is lost: what was not "
          + "synced waits in \(pending[0].path))")
    }
    for state in pending {
      let result = waitFor { () async -> Result<DamagedStateRecovery.Report, SyncError> in
        do throws(SyncError) {
          return .success(
            try await DamagedStateRecovery.recover(
              state, blobPath: { store.blobPath(hex: $0) }, hub: hub))
        } catch {
          return .failure(error)
        }
      }
      let report: DamagedStateRecovery.Report
      switch result {
      case .success(let value): report = value
      case .failure(let error):
        throw CommandFailure(
          "cannot send the hub what the damaged state in \(state.path) had not synced: \(error); "
            + "mount again to try again")
      }
      let complete =
        report.withoutContent.isEmpty && report.unreadable == 0 && report.problem == nil
      var lines = [
        report.recovered == 0 && complete
          ? "docsync: warning: \(state.path) had recorded nothing that had not reached the hub"
          : "docsync: warning: \(report.recovered) version(s) that had not reached the hub were "
            + "recovered from \(state.path)"
      ]
      if !report.withoutContent.isEmpty {
        lines.append(
          "docsync: warning: no intact copy of the content of \(report.withoutContent.count) "
            + "unsynced version(s) was found: \(report.withoutContent.prefix(5).joined(separator: ", "))"
        )
      }
      if report.unreadable > 0 || report.problem != nil {
        lines.append(
          "docsync: warning: part of the damaged state could not be read"
            + (report.problem.map { " (\($0))" } ?? "")
            + (report.unreadable > 0 ? "; \(report.unreadable) record(s) were damaged" : ""))
      }
      // Its working files are the only copy of what could not be recovered.
      lines[lines.count - 1] +=
        complete
        ? "; once the folder looks right, that folder may be deleted"
        : "; the working files it held are in \(state.path)/files"
      writeText(lines.map { $0 + "\n" }.joined(), to: 2)
    }
  }

  /// Says once, at mount, when the hub file or the state folder (which hold every document's
  /// content) can be read by other users of this machine, or the hub is reached unencrypted. docsync makes both private; these
  /// were made or changed by someone else.
  func warnIfShared(stateFolder: String) {
    var places = [(stateFolder, "state folder")]
    let hubLocation = hub ?? SQLiteHub.defaultLocation()
    if let warning = (try? PostgresLocation(parsing: hubLocation))?.warning {
      writeText("docsync: warning: \(warning)\n", to: 2)
    }
    if !hubLocation.contains("://") {
      places.append((URL(fileURLWithPath: hubLocation).standardizedFileURL.path, "hub"))
    }
    for (path, what) in places {
      var info = stat()
      guard stat(path, &info) == 0, info.st_mode & 0o077 != 0 else { continue }
      let mode = String(format: "%04o", info.st_mode & 0o7777)
      writeText(
        "docsync: warning: the \(what) \(path) is mode \(mode): other users of this machine "
          + "may read its documents (chmod go-rwx \(path) makes it private)\n", to: 2)
    }
  }

  /// Serves the mount in this process.
  func serve(mountPoint target: String, state folder: String) throws {
    raiseOpenFileLimit()
    let lockDescriptor = open(folder + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard lockDescriptor >= 0 else {
      throw CommandFailure("state folder \(folder) is not writable: \(errorText(errno))")
    }
    if flock(lockDescriptor, LOCK_EX | LOCK_NB) != 0 {
      // A daemon killed while a call through its mount waited can hold the folder for ever.
      guard let stuck = StuckDaemon.holding(stateFolder: folder) else {
        throw CommandFailure("state folder \(folder) is in use by another docsync mount")
      }
      try stuck.end(stateFolder: folder)
      guard flock(lockDescriptor, LOCK_EX | LOCK_NB) == 0 else {
        throw CommandFailure("state folder \(folder) is in use by another docsync mount")
      }
      writeText(
        "docsync: warning: the killed docsync process \(stuck.pid) could not exit; its FUSE "
          + "connection was aborted\n", to: 2)
    }
    let hubLocation = hub ?? SQLiteHub.defaultLocation()
    let library = LibraryRecord(stateFolder: folder)
    // Before the state is opened: a mistyped --hub leaves even a damaged state where it is.
    try library.check(hub: hubLocation)
    let store = try Self.openStore(folder)
    let hubInstance: any Hub
    do {
      hubInstance = try openAnyHub(location: hubLocation)
    } catch {
      throw CommandFailure(error.description)
    }
    let unreachable = Self.problemReaching(hubInstance, shown: LibraryRecord.shown(hubLocation))
    try Self.recoverDamagedStates(in: folder, store: store, hub: hubInstance, problem: unreachable)
    if let problem = unreachable {
      // A new mount has nothing to show without its hub, and the cause is most likely a
      // mistyped host or password; a mount set up before serves its files offline.
      guard library.isRecorded else { throw CommandFailure(problem) }
      writeText(
        "docsync: warning: \(problem); serving the local files meanwhile\n",
        to: 2)
    }
    let inChunks = ProcessInfo.processInfo.environment["DOCSYNC_CONTENT"] != "blobs"
    // The embedded hub cuts old blobs into chunks in this process, in the background: it has
    // no server, and its mounts are its only code. Not for a mount that moves whole blobs (a
    // test of what blobs do), which cannot fetch content that became chunks.
    if inChunks, let sqlite = hubInstance as? SQLiteHub {
      let log = Logger(label: "docsync.hub")
      // A failure that stays (a hub that needs a newer docsync) is logged once, not every run.
      let lastFailure = Mutex<String?>(nil)
      sqlite.convertInBackground { outcome in
        switch outcome {
        case .success(let total):
          lastFailure.withLock { $0 = nil }
          guard total.converted + total.damaged + total.skipped > 0 else { return }
          log.info(
            """
            cut \(total.converted) old blob(s) of \(total.bytes) bytes into chunks \
            (\(total.damaged) damaged, \(total.skipped) changed meanwhile)
            """)
        case .failure(let error):
          let text = "\(error)"
          let fresh = lastFailure.withLock { last in
            defer { last = text }
            return last != text
          }
          if fresh { log.warning("cannot cut old blobs into chunks now: \(text)") }
        }
      }
    }
    let engine: SyncEngine
    do {
      library.record(hub: hubLocation)
      // DOCSYNC_CONTENT=blobs moves new versions' content as whole blobs, as before chunks:
      // for the tests of what blobs still do (versions made before chunks, merges).
      engine = try SyncEngine(
        store: store, hub: hubInstance, hubDescription: LibraryRecord.shown(hubLocation),
        deviceName: device ?? Self.hostName(),
        contentInChunks: inChunks)
    } catch {
      throw CommandFailure("cannot start syncing: \(error)")
    }
    let fileSystem: DocumentFileSystem
    do {
      fileSystem = try DocumentFileSystem(
        store: store, engine: engine,
        checksPermissions: !SessionOptions.kernelChecksModes(allowOther: allowOther))
    } catch {
      throw CommandFailure("cannot read the state in \(folder): \(error)")
    }
    let mount = DocumentMount(fileSystem: fileSystem)
    // Before mounting, so that a control socket that cannot be made leaves no dead mount.
    try Control.serve(
      engine: engine, state: folder, mountPoint: target,
      mergeViews: { fileSystem.mergeViewNames(of: $0) })
    let session: Session
    do {
      session = try Session(
        fileSystem: mount,
        options: SessionOptions(
          mountPoint: target, fsName: MountTable.sourcePrefix + folder, allowOther: allowOther,
          checksModes: SessionOptions.kernelChecksModes(allowOther: allowOther),
          passthrough: !noPassthrough, ioUring: !noIoUring, handleKillPrivileges: true,
          debug: fuseDebug))
      try session.mount()
      try session.installSignalHandlers()
    } catch {
      throw CommandFailure("\(error)")
    }
    // Passthrough is on where the daemon may register backing files (root, unless refused).
    // DOCSYNC_ANNOUNCE=off raises no file notifications for sync's changes (only the kernel's
    // caches are invalidated): a diagnostic, to measure what announcing costs (docs/watchers.md).
    let announces = ProcessInfo.processInfo.environment["DOCSYNC_ANNOUNCE"] != "off"
    mount.startInvalidations(
      session.notifier, mountPoint: announces ? target : nil,
      readersFollowAppends: noPassthrough || geteuid() != 0)
    engine.start(tree: fileSystem)
    if !noNotify {
      DesktopNotifier.start(
        events: engine.events, mountPoint: target, logger: Logger(label: "docsync.notify"))
    }
    let pidFile = folder + "/docsync.pid"
    writeFile(pidFile, "\(getpid())\n")
    // From the mount table, not a stat of the mount, which would wait for this process.
    let connectionFile = folder + "/" + StuckDaemon.connectionFile
    if let connection = MountTable.record(at: target).flatMap({
      FuseConnection(mountInfoDevice: $0.device)
    }) {
      writeFile(connectionFile, "\(connection)\n")
    }
    // Once mounted, so that a mount that fails says only why; the parent of a daemon passes
    // warnings on when the mount is ready.
    warnIfShared(stateFolder: folder)
    writeText("ready \(target)\n", to: 1)
    if daemon { redirectOutput(to: folder + "/docsync.log") }
    let end: SessionEnd
    do {
      end = try session.run()
    } catch {
      writeText("docsync: \(error)\n", to: 2)
      end = .unmounted
    }
    if session.ioUringQueues > 0 {
      writeText(
        "docsync: FUSE over io_uring served \(session.ioUringRequests) requests on "
          + "\(session.ioUringQueues) queues\n", to: 2)
    }
    waitFor { await engine.stop() }
    fileSystem.invalidations.close()
    fileSystem.announcements.close()
    fileSystem.shutdown()
    if end != .unmounted { session.unmount() }
    // Nobody waits on the state database now: a state folder made before retention gets its
    // one full VACUUM here, never on the mount's path (see LocalStore.reclaimSpace).
    do {
      if try store.convertToIncrementalVacuum() {
        writeText("docsync: the state database now gives pruned space back by itself\n", to: 2)
      }
    } catch {
      writeText("docsync: cannot convert the state database for pruning: \(error)\n", to: 2)
    }
    store.shutdown()
    unlink(folder + "/" + Control.socketName)
    unlink(pidFile)
    unlink(connectionFile)
  }

  /// Why the hub cannot be read now (nil when it can), asked once before mounting; a hub that
  /// does not answer within the deadline counts as unreachable.
  static func problemReaching(_ hub: any Hub, shown: String, deadline: Duration = .seconds(15))
    -> String?
  {
    waitFor { () async -> String? in
      await withTaskGroup(of: String?.self) { group in
        group.addTask {
          do throws(HubError) {
            _ = try await hub.records(after: .start, limit: 1)
            return nil
          } catch {
            return error.description
          }
        }
        group.addTask {
          await MonotonicTimer.shared.sleep(for: deadline)
          return "hub unreachable: no answer from \(shown) within \(deadline)"
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
      }
    }
  }

  /// Starts `docsync mount --daemon` in a new session and waits for it to say it is ready.
  func startDaemon(mountPoint target: String, state folder: String) throws {
    guard let pipeEnds = makePipe() else { throw CommandFailure(errorText(errno)) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
    posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // A session of its own, so that the daemon outlives the terminal that started it.
    posix_spawnattr_setflags(&attributes, Int16(posixSpawnSetSID))
    var arguments = ["docsync", "mount", target, "--state", folder, "--daemon"]
    if allowOther { arguments.append("--allow-other") }
    if fuseDebug { arguments.append("--fuse-debug") }
    if noPassthrough { arguments.append("--no-passthrough") }
    if noNotify { arguments.append("--no-notify") }
    if noIoUring { arguments.append("--no-io-uring") }
    if let hub { arguments += ["--hub", hub] }
    if let device { arguments += ["--device", device] }
    arguments += ["--log-level", logLevel.rawValue]
    let cArguments = arguments.map { strdup($0) } + [nil]
    defer { cArguments.forEach { free($0) } }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, cArguments, environ)
    close(pipeEnds[1])
    defer { close(pipeEnds[0]) }
    guard result == 0 else {
      throw CommandFailure("cannot start the mount process: \(errorText(result))")
    }
    let output = readToEnd(pipeEnds[0])
    let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
    if lines.contains(where: { $0.hasPrefix("ready ") }) {
      for line in lines where line.hasPrefix("docsync: warning: ") { writeText(line + "\n", to: 2) }
      return
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    // A warning said before the failure (a damaged state set aside) still holds.
    for line in lines where line.hasPrefix("docsync: warning: ") { writeText(line + "\n", to: 2) }
    let message =
      lines.last(where: { $0.hasPrefix("docsync: ") }).map { String($0.dropFirst(9)) }
      ?? lines.last.map(String.init) ?? "the mount process stopped before the mount was ready"
    throw CommandFailure(message)
  }
}

// POSIX_SPAWN_SETSID from glibc's <spawn.h>, hidden from Swift behind _GNU_SOURCE.
let posixSpawnSetSID: Int32 = 0x80

/// Closes every descriptor above stderr: the daemon lives long, and a descriptor it inherited
/// by accident (one open in another mount, say) would stay open for its whole life.
func closeInheritedDescriptors() {
  guard let dir = opendir("/proc/self/fd") else { return }
  var descriptors: [Int32] = []
  while let entry = readdir(dir) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) {
      String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
    }
    if let fd = Int32(name), fd > 2 { descriptors.append(fd) }
  }
  let own = dirfd(dir)
  closedir(dir)
  for fd in descriptors where fd != own { close(fd) }
}

/// Lifts this process's soft limit on open descriptors to its hard limit, as libfuse's
/// `passthrough_ll` does: every file open on the mount holds its working file open in the
/// daemon, and at the usual soft limit of 1,024 a person's 999th open file on the mount failed
/// with "Too many open files", whatever their own program's limit.
func raiseOpenFileLimit() {
  var limit = rlimit()
  let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
  guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
  limit.rlim_cur = limit.rlim_max
  _ = setrlimit(resource, &limit)
}

/// Sends stdout and stderr to the log in the state folder once the starter stops listening.
func redirectOutput(to path: String) {
  let log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
  guard log >= 0 else { return }
  dup2(log, 1)
  dup2(log, 2)
  close(log)
}

func writeFile(_ path: String, _ text: String) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
  guard fd >= 0 else { return }
  _ = text.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, $0.count - 1) }
  close(fd)
}

extension String {
  func replacingAll(_ target: String, with replacement: String) -> String {
    split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
  }
}
