import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A fresh docsync mount (or, in plain mode, a plain folder) for one test, with its own state
/// folder, run by the real binary as a subprocess.
///
/// The server never runs inside the test process: a FUSE server that touches its own mount
/// from its own process can deadlock (see STYLE.md, gocryptfs and rclone).
public final class MountFixture {
  /// Not /tmp: vim skips backups under /tmp, and the vim test wants the real save path.
  /// Where every mount test makes its folders; `DOCSYNC_TESTS_ROOT` lets two runs on one
  /// machine stay out of each other's way (Tools/test unmounts what it finds under its own).
  public static let testsRoot =
    TestEnvironment.variables["DOCSYNC_TESTS_ROOT"].flatMap { $0.isEmpty ? nil : $0 }
    ?? "/var/tmp/docsync-tests"

  /// `<testsRoot>/<pid>-<random>`: the pid tells a later run whether this folder is stale.
  public let base: String
  public let mountPoint: String
  public let state: String
  public let isPlain: Bool
  /// Options added to `docsync mount`.
  public let mountOptions: [String]
  /// A program and its arguments that `docsync mount` runs under (such as `prlimit`), or none.
  public let launcher: [String]
  private(set) var isMounted = false

  private init(plain: Bool, mountOptions: [String] = [], launcher: [String] = []) throws {
    _ = Self.staleMountsCleaned
    isPlain = plain
    self.mountOptions = mountOptions
    self.launcher = launcher
    base = "\(Self.testsRoot)/\(getpid())-\(UUID().uuidString.prefix(8).lowercased())"
    mountPoint = "\(base)/mnt"
    state = "\(base)/state"
    try Self.makePrivateFolder(base)
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    try Self.makePrivateFolder(state)
  }

  /// A folder only its owner may enter, as docsync makes its own: docsync warns about a state
  /// folder or hub that others can read, and that warning is not what these tests are about.
  public static func makePrivateFolder(_ path: String, mode: mode_t = 0o700) throws {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    guard chmod(path, mode) == 0 else {
      throw RunError(description: "chmod \(path): \(String(cString: strerror(errno)))")
    }
  }

  /// Runs `body` with a mounted fixture and unmounts afterwards, also when `body` throws.
  public static func withMount<R>(
    programs: [String] = [], options: [String] = [], launcher: [String] = [],
    _ body: (MountFixture) throws -> R
  ) throws -> R {
    try TestEnvironment.require(programs: programs)
    let fixture = try MountFixture(
      plain: TestEnvironment.isPlain, mountOptions: options, launcher: launcher)
    defer { fixture.tearDown() }
    try fixture.mount()
    return try body(fixture)
  }

  /// Runs `body` with the fixture's folders but nothing mounted: for tests of the command line.
  public static func withScratch<R>(_ body: (MountFixture) throws -> R) throws -> R {
    let fixture = try MountFixture(plain: TestEnvironment.isPlain)
    defer { fixture.tearDown() }
    return try body(fixture)
  }

  public func path(_ relative: String) -> String { "\(mountPoint)/\(relative)" }

  /// A folder beside the mount, on the same local file system, for plain copies to compare with.
  public func scratch(_ relative: String) -> String { "\(base)/\(relative)" }

  public func mount() throws {
    guard !isPlain else {
      isMounted = true
      return
    }
    try TestEnvironment.require(programs: [])
    let result = try run(
      // A hub of its own: the default hub is shared by every mount of the user, and tests must
      // not sync into each other.
      launcher + [
        try Self.docsyncBinary(), "mount", mountPoint, "--state", state, "--hub",
        "\(base)/hub.sqlite",
      ] + mountOptions,
      timeout: .seconds(60))
    guard result.status == 0 else {
      throw RunError(description: "docsync mount failed: \(result)\n\(logTail())")
    }
    guard Self.mountedPoints().contains(mountPoint) else {
      throw RunError(description: "docsync mount exited 0 but \(mountPoint) is not mounted")
    }
    isMounted = true
  }

  /// `docsync unmount`; falls back to `fusermount3 -uz` so that no test leaves a mount behind.
  public func unmount() throws {
    guard isMounted else { return }
    isMounted = false
    guard !isPlain else { return }
    var result = try run([try Self.docsyncBinary(), "unmount", mountPoint], timeout: .seconds(60))
    // Tests run in parallel and spawn programs; a child of another test can inherit a
    // descriptor this test had open in its mount for a moment, and then the mount is busy
    // until that child exits.
    var attempts = 0
    while result.status != 0 && result.stderr.contains("busy") && attempts < 40 {
      usleep(250_000)
      attempts += 1
      result = try run([try Self.docsyncBinary(), "unmount", mountPoint], timeout: .seconds(60))
    }
    if result.status != 0 || Self.mountedPoints().contains(mountPoint) {
      Self.forceUnmount(mountPoint)
      throw RunError(description: "docsync unmount failed: \(result)\n\(logTail())")
    }
  }

  /// After the daemon went away on its own (SIGTERM): detach whatever it may have left.
  public func markUnmounted() {
    if Self.mountedPoints().contains(mountPoint) { Self.forceUnmount(mountPoint) }
    isMounted = false
  }

  public func remount() throws {
    try unmount()
    try mount()
  }

  /// The daemon's pid, as it wrote it in the state folder.
  public func daemonPID() throws -> pid_t {
    let text = try String(contentsOfFile: "\(state)/docsync.pid", encoding: .utf8)
    guard let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
      throw RunError(description: "docsync.pid holds \(text.debugDescription)")
    }
    return pid
  }

  /// `kill -9` the daemon and detach its dead mount: what a power cut leaves, minus the kernel.
  public func crash() throws {
    guard !isPlain else { return }
    let pid = try daemonPID()
    guard kill(pid, SIGKILL) == 0 else {
      throw RunError(description: "kill -9 \(pid): \(String(cString: strerror(errno)))")
    }
    for _ in 0..<500 where kill(pid, 0) == 0 { usleep(10_000) }
    Self.forceUnmount(mountPoint)
    isMounted = false
  }

  public func logTail() -> String {
    let log = (try? String(contentsOfFile: "\(state)/docsync.log", encoding: .utf8)) ?? ""
    return "docsync.log (tail):\n" + log.split(separator: "\n").suffix(30).joined(separator: "\n")
  }

  private func tearDown() {
    if isMounted {
      do { try unmount() } catch { Issue.record(error, "while tearing down the mount") }
    }
    // Removing a folder that is still mounted would delete through the mount.
    guard !Self.mountedPoints().contains(where: { $0.hasPrefix(base + "/") }) else { return }
    if TestEnvironment.variables["DOCSYNC_MOUNTTESTS_KEEP"] != "1" {
      try? FileManager.default.removeItem(atPath: base)
    }
  }

  // MARK: - The binary

  /// `DOCSYNC_BIN`, or `docsync` beside the test executable (on Linux both live in the bin
  /// path of `swift build`).
  public static func docsyncBinary() throws -> String {
    if let path = TestEnvironment.variables["DOCSYNC_BIN"], !path.isEmpty {
      guard access(path, X_OK) == 0 else {
        throw RunError(description: "DOCSYNC_BIN=\(path) is not an executable")
      }
      return path
    }
    var folders: [String] = []
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      folders.append((exe as NSString).deletingLastPathComponent)
    }
    folders.append((CommandLine.arguments[0] as NSString).deletingLastPathComponent)
    folders.append(Bundle.main.bundleURL.deletingLastPathComponent().path)
    folders.append(Bundle.main.bundlePath)
    for folder in folders where access("\(folder)/docsync", X_OK) == 0 {
      return "\(folder)/docsync"
    }
    throw RunError(
      description: "no docsync binary: set DOCSYNC_BIN or build it (looked in \(folders))")
  }

  // MARK: - Mounts

  /// FUSE mount points under `testsRoot`, from /proc/self/mountinfo.
  public static func mountedPoints() -> [String] {
    guard let text = procFile("/proc/self/mountinfo") else { return [] }
    return text.split(separator: "\n").compactMap { line in
      // Fields: id parent major:minor root mountpoint options... - fstype source superoptions
      let fields = line.split(separator: " ")
      guard fields.count > 5, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count,
        fields[dash + 1].hasPrefix("fuse")
      else { return nil }
      let point = unescapeMountInfo(String(fields[4]))
      return point.hasPrefix(testsRoot + "/") ? point : nil
    }
  }

  /// The whole text of a /proc file, read until end of file: Foundation's
  /// `String(contentsOfFile:)` stops after the first read, which for mountinfo is a page's
  /// worth of whole lines, so with a few dozen mounts on the machine a new mount was not seen.
  public static func procFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      if n < 0 { return nil }
      if n == 0 { break }
      bytes += buffer[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// mountinfo writes space, tab, newline and backslash as `\ooo`.
  public static func unescapeMountInfo(_ field: String) -> String {
    var bytes: [UInt8] = []
    var utf8 = Array(field.utf8)[...]
    while let byte = utf8.popFirst() {
      if byte == UInt8(ascii: "\\"), utf8.count >= 3,
        let code = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8)
      {
        bytes.append(code)
        utf8 = utf8.dropFirst(3)
      } else {
        bytes.append(byte)
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  public static func forceUnmount(_ point: String) {
    _ = try? run(["fusermount3", "-uz", point], timeout: .seconds(30))
  }

  /// Aborts the FUSE connection of the mount at `point` (fusectl's `abort`, which its owner
  /// may write): every request waiting on it fails at once. Found by the mount's device number
  /// in /proc/self/mountinfo, not by a stat of the mount point, which would wait on the
  /// connection itself.
  public static func abortConnection(of point: String) {
    guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
    else { return }
    for line in table.split(separator: "\n") {
      let fields = line.split(separator: " ")
      guard fields.count > 4,
        fields[4].replacingOccurrences(of: "\\040", with: " ") == point,
        let minor = fields[2].split(separator: ":").last
      else { continue }
      let fd = open("/sys/fs/fuse/connections/\(minor)/abort", O_WRONLY | O_CLOEXEC)
      guard fd >= 0 else { return }
      _ = write(fd, "1", 1)
      close(fd)
      return
    }
  }

  /// Sticky and writable by everyone, as /tmp is: Tools/test runs some tests as root and the
  /// mount tests as an ordinary user, and both make their folders here.
  static func makeTestsRoot() {
    guard !FileManager.default.fileExists(atPath: testsRoot) else { return }
    try? FileManager.default.createDirectory(atPath: testsRoot, withIntermediateDirectories: true)
    chmod(testsRoot, 0o1777)
  }

  /// Mounts and folders left by earlier runs whose test process is gone, cleaned once per
  /// process. Folders of a live process (another `swift test` at the same time) are left alone.
  public static let staleMountsCleaned: Void = {
    makeTestsRoot()
    func isStale(_ name: Substring) -> Bool {
      guard let pid = pid_t(name.prefix { $0 != "-" }) else { return true }
      return pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH
    }
    for point in mountedPoints() {
      let run = point.dropFirst(testsRoot.count + 1).prefix { $0 != "/" }
      if isStale(run) { forceUnmount(point) }
    }
    let stillMounted = mountedPoints()
    for name in (try? FileManager.default.contentsOfDirectory(atPath: testsRoot)) ?? []
    where isStale(Substring(name)) {
      let folder = "\(testsRoot)/\(name)"
      if !stillMounted.contains(where: { $0.hasPrefix(folder + "/") }) {
        try? FileManager.default.removeItem(atPath: folder)
      }
    }
  }()
}
