import Glibc

/// A mount's FUSE connection as the kernel's control file system (fusectl) names it, and the
/// one way to end it from outside when its daemon cannot.
///
/// A killed daemon can be unable to exit: one of its threads waits, unkillably, for the answer
/// to a call through its own mount (or for a folder's lock that another program's call holds
/// while it waits for the dead daemon), so `/dev/fuse` stays open and nothing ends the call. A
/// lazy unmount does not help; writing to the connection's `abort` file does (the kernel's
/// `fs/fuse/control.c` makes that file writable by the mount's owner).
public struct FuseConnection: Sendable, Hashable, CustomStringConvertible {
  /// The superblock's device number in the kernel's own encoding (major << 20 | minor), which
  /// is the name of the connection's folder under `/sys/fs/fuse/connections`.
  public let id: UInt32

  public static let controlFolder = "/sys/fs/fuse/connections"

  public init(id: UInt32) { self.id = id }

  /// The connection of a mount, from its `major:minor` field in /proc/self/mountinfo (reading
  /// the table sends no request to the mount, which a `stat` of it would).
  public init?(mountInfoDevice field: String) {
    let parts = field.split(separator: ":")
    guard parts.count == 2, let major = UInt32(parts[0]), let minor = UInt32(parts[1]),
      major < 1 << 12, minor < 1 << 20
    else { return nil }
    id = major << 20 | minor
  }

  /// How it is written down in a state folder: the number alone.
  public init?(recorded text: String) {
    guard let id = UInt32(text.filter { !$0.isWhitespace }) else { return nil }
    self.id = id
  }

  public var description: String { "\(id)" }

  /// What writing to the connection's `abort` file did.
  public enum AbortOutcome: Sendable, Equatable {
    /// The kernel ended every call waiting on it; the mount answers ENOTCONN from now on.
    case aborted
    /// No such connection: it has ended already.
    case ended
    /// fusectl is not mounted here, so the connection cannot be reached (only root can mount it).
    case noControlFileSystem
    /// The `abort` file refused the write (another user's mount).
    case refused(Int32)
  }

  /// Ends the connection: every request waiting on it fails at once, and a daemon held by one
  /// can exit. Only for a connection whose daemon is dead; a live one loses its mount.
  public func abort() -> AbortOutcome {
    guard Self.controlFileSystemIsMounted() else { return .noControlFileSystem }
    let descriptor = open("\(Self.controlFolder)/\(id)/abort", O_WRONLY | O_CLOEXEC)
    guard descriptor >= 0 else {
      return errno == ENOENT ? .ended : .refused(errno)
    }
    defer { close(descriptor) }
    let written = write(descriptor, "1", 1)
    if written == 1 { return .aborted }
    return errno == ENOTCONN || errno == ENODEV ? .ended : .refused(errno)
  }

  /// Whether fusectl is mounted on the control folder, which is an empty folder of sysfs
  /// until it is (systemd mounts it on desktops; a container may not).
  static func controlFileSystemIsMounted() -> Bool {
    let descriptor = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var table: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { break }
      table += buffer[0..<count]
    }
    return String(decoding: table, as: UTF8.self).split(separator: "\n").contains { line in
      let fields = line.split(separator: " ")
      return fields.count > 4 && fields[4] == controlFolder && line.contains(" - fusectl ")
    }
  }
}
