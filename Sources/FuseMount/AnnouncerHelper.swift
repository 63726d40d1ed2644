import Glibc

/// The announcing process: a child of the daemon that makes, through the mount, the calls that
/// the daemon's ``Announcer`` asks for, one at a time, over the socket on its standard input.
///
/// A process of its own, not a thread of the daemon: a call through the mount waits for one of
/// the daemon's FUSE threads to answer it, and once the kernel has handed the request over it
/// waits uninterruptibly. A daemon thread in such a call when the daemon is killed never ends,
/// so the dead daemon never exits: its /dev/fuse stays open, its mount stays busy and its state
/// folder stays locked, and the next mount fails. A child waits in its own call instead; the
/// daemon's death closes /dev/fuse, the kernel aborts the connection and the call returns.
public enum AnnouncerHelper {
  /// The first argument that starts the docsync executable as this process.
  public static let argument = "__announce"

  /// Serves the daemon's requests until it closes the socket or dies.
  public static func run() -> Never {
    closeInheritedDescriptors()
    // Not inside any mount: the process must never keep one busy.
    _ = chdir("/")
    var buffer = [UInt8](repeating: 0, count: AnnouncerRequest.maximumSize + 1)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(0, $0.baseAddress, $0.count, 0) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { exit(0) }
      var result = EINVAL
      if let request = AnnouncerRequest(decoding: Array(buffer[0..<count])) {
        result = perform(request)
      }
      let sent = withUnsafeBytes(of: &result) {
        send(0, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      if sent < 0 { exit(0) }
    }
  }

  /// Makes the call; the errno it ended with, 0 for success.
  static func perform(_ request: AnnouncerRequest) -> Int32 {
    let folder = (request.folder + [0]).withUnsafeBufferPointer { bytes in
      bytes.withMemoryRebound(to: CChar.self) {
        open($0.baseAddress!, pathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
      }
    }
    guard folder >= 0 else { return errno }
    defer { close(folder) }
    // Names never hold a NUL byte.
    let name = request.name.map { CChar(bitPattern: $0) } + [0]
    let succeeded: Bool
    switch request.operation {
    case .createFile:
      let fd = openat(folder, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
      if fd >= 0 { close(fd) }
      succeeded = fd >= 0
    case .makeDirectory:
      succeeded = mkdirat(folder, name, 0o700) == 0
    case .makeSymlink:
      succeeded = symlinkat(".", folder, name) == 0
    case .unlink:
      succeeded = unlinkat(folder, name, 0) == 0
    case .removeDirectory:
      succeeded = unlinkat(folder, name, AT_REMOVEDIR) == 0
    case .truncate:
      let fd = openat(folder, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
      guard fd >= 0 else { return errno }
      let truncated = ftruncate(fd, off_t(request.value)) == 0
      let failure = errno
      close(fd)
      return truncated ? 0 : failure
    case .changeMode:
      succeeded = fchmodat(folder, name, mode_t(request.value & 0o7777), 0) == 0
    }
    return succeeded ? 0 : errno
  }

  /// O_PATH, which Glibc's module does not export: the folder is opened for the calls in it
  /// only, with no OPENDIR, and so no IN_OPEN for its watchers.
  static let pathOnly: Int32 = 0o10_000_000

  /// Closes every descriptor but the standard three: one inherited from the daemon (its
  /// /dev/fuse above all) would keep the daemon's connection alive after its death, and this
  /// process waiting on it.
  private static func closeInheritedDescriptors() {
    guard let folder = opendir("/proc/self/fd") else { return }
    var open: [Int32] = []
    while let entry = readdir(folder) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
        String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
      }
      if let fd = Int32(name), fd > 2 { open.append(fd) }
    }
    let listing = dirfd(folder)
    closedir(folder)
    for fd in open where fd != listing { close(fd) }
  }
}
