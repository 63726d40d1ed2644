import FuseLowLevel
import Glibc

/// A docsync process that holds a state folder's lock but was killed and cannot exit, and the
/// FUSE connection whose abort lets it go.
///
/// After `kill -9`, a thread of the daemon can wait without end: for the answer to a call it
/// made through its own mount (the announcer's), which only its dead threads could give, or in
/// an invalidation, for a folder's lock that another program's call through the mount holds
/// while it waits for the dead daemon. The process keeps `/dev/fuse` and the state folder's
/// lock until the connection is aborted, so without this every later mount of the folder
/// would be refused as "in use".
struct StuckDaemon {
  let pid: pid_t
  let connection: FuseConnection?

  /// Where a serving daemon writes its connection, for this, beside `docsync.pid`.
  static let connectionFile = "docsync.connection"

  /// The holder of `folder`'s lock, when it is a process that is dying; nil when nobody holds
  /// the lock or its holder is alive (a mount that serves: never abort that).
  static func holding(stateFolder folder: String) -> StuckDaemon? {
    var info = stat()
    guard stat(folder + "/lock", &info) == 0, let table = readTextFile("/proc/locks"),
      let pid = lockHolder(in: table, device: UInt64(info.st_dev), inode: UInt64(info.st_ino)),
      let status = readTextFile("/proc/\(pid)/status"), isDying(status: status)
    else { return nil }
    let recorded = readTextFile(folder + "/" + connectionFile).flatMap {
      FuseConnection(recorded: $0)
    }
    // A state folder from before the connection was recorded: its mount, if still there.
    let mounted = MountTable.records().last { $0.docsyncState == folder }.flatMap {
      FuseConnection(mountInfoDevice: $0.device)
    }
    return StuckDaemon(pid: pid, connection: recorded ?? mounted)
  }

  /// The process holding a `flock` on the file `device`/`inode`, from /proc/locks (lines such as
  /// `3: FLOCK  ADVISORY  WRITE 5246 00:2a:1234 0 EOF`; `->` lines are waiters, not holders).
  static func lockHolder(in table: String, device: UInt64, inode: UInt64) -> pid_t? {
    // glibc's encoding of dev_t, which the kernel prints as hex MAJOR:MINOR.
    let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
    let minor = (device & 0xff) | ((device >> 12) & ~0xff)
    func twoDigits(_ value: UInt64) -> String {
      let text = String(value, radix: 16)
      return text.count < 2 ? "0" + text : text
    }
    let file = "\(twoDigits(major)):\(twoDigits(minor)):\(inode)"
    for line in table.split(separator: "\n") {
      let fields = line.split(separator: " ")
      guard fields.count >= 6, fields[1] == "FLOCK", fields[5] == file else { continue }
      return pid_t(fields[4])
    }
    return nil
  }

  /// Whether /proc/PID/status describes a process that is exiting: its first thread has
  /// exited (a zombie leader with threads left) or SIGKILL is pending for it.
  static func isDying(status: String) -> Bool {
    for line in status.split(separator: "\n") {
      let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard fields.count >= 2 else { continue }
      switch fields[0] {
      case "State:":
        if fields[1] == "Z" || fields[1] == "X" { return true }
      case "SigPnd:", "ShdPnd:":
        if let mask = UInt64(fields[1], radix: 16), mask & (1 << (UInt64(SIGKILL) - 1)) != 0 {
          return true
        }
      default: continue
      }
    }
    return false
  }

  /// Aborts the connection and waits until the process has let go of `folder`'s lock (it
  /// exits once nothing holds it); throws one line that says what a person can do when it
  /// cannot.
  func end(stateFolder folder: String) throws {
    let prefix = "state folder \(folder) is held by docsync process \(pid), which was killed"
    guard let connection else {
      throw CommandFailure(
        "\(prefix) and cannot exit; its FUSE connection is not known: as root, write 1 to "
          + "the abort file of its connection under \(FuseConnection.controlFolder)")
    }
    switch connection.abort() {
    case .aborted, .ended:
      break
    case .noControlFileSystem:
      throw CommandFailure(
        "\(prefix) and cannot exit until its FUSE connection \(connection) is aborted, which "
          + "needs the fuse control file system: as root, mount -t fusectl none "
          + "\(FuseConnection.controlFolder), then run this again")
    case .refused(let code):
      throw CommandFailure(
        "\(prefix) and cannot exit; aborting its FUSE connection failed (\(errorText(code))): "
          + "as root, echo 1 > \(FuseConnection.controlFolder)/\(connection)/abort")
    }
    let lock = open(folder + "/lock", O_RDWR | O_CLOEXEC)
    guard lock >= 0 else { return }
    defer { close(lock) }
    for _ in 0..<200 {
      if flock(lock, LOCK_EX | LOCK_NB) == 0 {
        flock(lock, LOCK_UN)
        return
      }
      usleep(50_000)
    }
    throw CommandFailure(
      "\(prefix); its FUSE connection \(connection) was aborted but it still holds the folder "
        + "after 10 seconds")
  }
}
