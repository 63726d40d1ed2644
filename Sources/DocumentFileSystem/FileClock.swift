import Glibc
import Synchronization

/// The clock the kernel stamps files with, for the times docsync stamps itself: folders,
/// symlinks and special files (a regular file's times are its working file's).
///
/// One clock for every ctime: reading CLOCK_REALTIME here while the kernel stamped working
/// files with its own (coarse, 4 ms behind on this machine; fine-grained only for an inode
/// whose time was looked at since) let `link()` give a file a ctime earlier than that of a
/// folder made just before it (issue 45). Each reading stamps an unnamed file on the disk of
/// the working files and reads its ctime back, so it is the kernel's time for that disk.
enum FileClock {
  private static let descriptor = Atomic<Int32>(-1)
  /// `O_TMPFILE`, which Swift's Glibc module does not import (`__O_TMPFILE | O_DIRECTORY`).
  private static let temporaryFile: Int32 = 0o20_200_000

  /// Reads the clock from the disk of `directory` from now on; the first folder given wins.
  static func adopt(directory: Int32) {
    guard descriptor.load(ordering: .acquiring) < 0 else { return }
    let fd = openat(directory, ".", temporaryFile | O_RDWR | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return }
    if !descriptor.compareExchange(expected: -1, desired: fd, ordering: .acquiringAndReleasing)
      .exchanged
    {
      close(fd)
    }
  }

  /// Nanoseconds since the epoch, clamped as every time docsync keeps.
  static func now() -> Int64 {
    let fd = descriptor.load(ordering: .acquiring)
    var status = stat()
    if fd >= 0, futimens(fd, nil) == 0, fstat(fd, &status) == 0 {
      return nanoseconds(status.st_ctim)
    }
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return nanoseconds(now)
  }
}
