import Glibc

/// Who asks for an operation: the calling process's ids, as the kernel reports them.
public struct Caller: Sendable {
  public var uid: UInt32
  public var gid: UInt32
  public var pid: Int32

  public init(uid: UInt32, gid: UInt32, pid: Int32 = 0) {
    self.uid = uid
    self.gid = gid
    self.pid = pid
  }

  /// The process that runs this code.
  public static var current: Caller { Caller(uid: getuid(), gid: getgid(), pid: getpid()) }

  /// Whether the caller belongs to `group`: its own group, or one of the supplementary groups
  /// of its process. The kernel sends only the first with a request; the others are read from
  /// /proc, as libfuse's `fuse_req_getgroups` does, and only when the first does not match,
  /// which on a private mount means a node that its owner gave to another group.
  public func isMember(of group: UInt32) -> Bool {
    if group == gid { return true }
    guard pid > 0 else { return false }
    return Self.supplementaryGroups(of: pid).contains(group)
  }

  /// The `Groups:` field of /proc/PID/status; empty when the process is gone.
  static func supplementaryGroups(of pid: Int32) -> [UInt32] {
    guard let groups = ProcessStatus.field("Groups", of: String(pid)) else { return [] }
    return groups.split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { UInt32($0) }
  }
}
