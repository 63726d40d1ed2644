import Glibc
import SystemPackage

extension DocumentFileSystem {
  /// How many descriptors below its limit the daemon keeps for its own work, at most: the
  /// state database's and the hub's connections (opened as they are needed), blob files while
  /// a closed file is recorded or a pull lands, the control socket's clients, and the working
  /// files made ahead of creates. A mount idles at about 60 descriptors.
  public static let descriptorReserve: Int32 = 128

  /// The ceiling for a limit of `limit` open descriptors: the limit less the reserve, and at
  /// most three quarters of a small limit, so that a person's files still get most of it.
  public static func descriptorCeiling(forLimit limit: Int) -> Int32 {
    let bounded = Int32(clamping: limit)
    return bounded - min(descriptorReserve, bounded / 4)
  }

  /// This process's soft limit on open descriptors, as the daemon has raised it before it
  /// loads the tree.
  static func openFileLimit() -> Int {
    var limit = rlimit()
    // Unlimited (RLIM_INFINITY, all bits set) clamps to the largest descriptor number.
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
      return Int(Int32.max)
    }
    return Int(clamping: min(limit.rlim_cur, rlim_t(Int32.max)))
  }

  /// Lets an open on the mount keep `fd` only below ``descriptorCeiling``; otherwise closes
  /// it and throws ENFILE ("too many open files in system": the mount's table is full, not
  /// the caller's). Every file open on the mount holds a descriptor of the daemon's, so
  /// without this a person's open files could take the last descriptors, and the daemon
  /// could then neither record a file closed meanwhile nor answer `docsync sync`. Linux
  /// hands out the lowest free number, so a number at the ceiling means that fewer than the
  /// reserve are left.
  func admit(_ fd: Int32) throws(Errno) {
    guard fd >= descriptorCeiling else { return }
    close(fd)
    throw Errno(rawValue: ENFILE)
  }
}
