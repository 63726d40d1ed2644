import Glibc

/// The daemon's end of the announcing process (``AnnouncerHelper``): starts it as the daemon's
/// own executable, sends it one call at a time over a socket and waits for each answer, and
/// ends it. Waiting on the socket, unlike waiting in a call through the mount, ends when the
/// daemon is killed.
final class AnnouncerProcess {
  let pid: pid_t
  private let socket: Int32

  /// Starts the process from `executable`, which must run ``AnnouncerHelper/run()`` when its
  /// first argument is ``AnnouncerHelper/argument``; nil when it cannot be started.
  init?(executable: String = "/proc/self/exe") {
    var ends: [Int32] = [-1, -1]
    let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    guard socketpair(AF_UNIX, type, 0, &ends) == 0 else { return nil }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, ends[1], 0)
    // Nothing of the daemon's: `docsync mount` reads the daemon's output until its end.
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let words: [String] = ["docsync", AnnouncerHelper.argument]
    let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
    defer { arguments.forEach { free($0) } }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, executable, &actions, nil, arguments, environ)
    close(ends[1])
    guard result == 0 else {
      close(ends[0])
      return nil
    }
    self.pid = pid
    socket = ends[0]
  }

  /// Has the process make the call; the errno it ended with (0 for success), nil when the
  /// process has gone.
  func call(_ request: AnnouncerRequest) -> Int32? {
    let bytes = request.encoded
    let sent = bytes.withUnsafeBytes {
      Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
    }
    guard sent == bytes.count else { return nil }
    var reply: Int32 = 0
    while true {
      let count = withUnsafeMutableBytes(of: &reply) { recv(socket, $0.baseAddress, $0.count, 0) }
      if count < 0 && errno == EINTR { continue }
      return count == MemoryLayout<Int32>.size ? reply : nil
    }
  }

  /// Ends the process: it leaves when it reads the end of the socket. Not waited for: a call
  /// it is making may wait for a FUSE thread that no longer serves, until the daemon's exit
  /// closes /dev/fuse.
  func end() {
    close(socket)
    var status: Int32 = 0
    _ = waitpid(pid, &status, WNOHANG)
  }
}
