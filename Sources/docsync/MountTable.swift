import Glibc

/// One line of /proc/self/mountinfo.
struct MountRecord {
  let mountPoint: String
  let type: String
  let source: String
  /// The mount's `major:minor`, which names its FUSE connection.
  let device: String

  /// The state folder of a docsync mount, which the mount carries as its source name.
  var docsyncState: String? {
    guard type == "fuse.docsync", source.hasPrefix(MountTable.sourcePrefix) else { return nil }
    return String(source.dropFirst(MountTable.sourcePrefix.count))
  }
}

/// The kernel's table of mounts.
enum MountTable {
  static let sourcePrefix = "docsync:"

  static func records() -> [MountRecord] {
    guard let text = readTextFile("/proc/self/mountinfo") else { return [] }
    return text.split(separator: "\n").compactMap { line in
      let fields = line.split(separator: " ", omittingEmptySubsequences: false)
      guard let dash = fields.firstIndex(of: "-"), dash + 2 < fields.count, fields.count > 4
      else { return nil }
      return MountRecord(
        mountPoint: unescape(fields[4]), type: unescape(fields[dash + 1]),
        source: unescape(fields[dash + 2]), device: String(fields[2]))
    }
  }

  static func record(at path: String) -> MountRecord? {
    records().last { $0.mountPoint == path }
  }

  /// mountinfo writes space, tab, newline and backslash as octal escapes.
  static func unescape(_ field: Substring) -> String {
    var bytes: [UInt8] = []
    let raw = Array(field.utf8)
    var index = 0
    while index < raw.count {
      if raw[index] == UInt8(ascii: "\\"), index + 3 < raw.count,
        let value = UInt8(String(decoding: raw[(index + 1)...(index + 3)], as: UTF8.self), radix: 8)
      {
        bytes.append(value)
        index += 4
      } else {
        bytes.append(raw[index])
        index += 1
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}

func readTextFile(_ path: String) -> String? {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return nil }
  defer { close(fd) }
  return String(decoding: readToEnd(fd), as: UTF8.self)
}

/// Everything a descriptor has to give, until end of file or an error.
func readToEnd(_ fd: Int32) -> [UInt8] {
  var bytes: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 65536)
  while true {
    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if n < 0 && errno == EINTR { continue }
    if n <= 0 { break }
    bytes += buffer[0..<n]
  }
  return bytes
}

func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

/// The absolute, symlink-free form of a path that exists.
func resolvedPath(_ path: String) -> String? {
  guard let resolved = realpath(path, nil) else { return nil }
  defer { free(resolved) }
  return String(cString: resolved)
}

/// Runs a program and returns its exit status and what it wrote to stderr.
func runProgram(_ arguments: [String]) -> (status: Int32, errorOutput: String) {
  guard let pipeEnds = makePipe() else { return (-1, errorText(errno)) }
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
  posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
  var pid: pid_t = 0
  let arguments = arguments.map { strdup($0) } + [nil]
  defer { arguments.forEach { free($0) } }
  let result = posix_spawnp(&pid, arguments[0]!, &actions, nil, arguments, environ)
  close(pipeEnds[1])
  defer { close(pipeEnds[0]) }
  guard result == 0 else { return (-1, errorText(result)) }
  let output = readToEnd(pipeEnds[0])
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
  let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
  return (exitStatus, String(decoding: output, as: UTF8.self))
}

/// A pipe whose ends close on exec (pipe2 is not visible to Swift without _GNU_SOURCE).
func makePipe() -> [Int32]? {
  var ends: [Int32] = [0, 0]
  guard pipe(&ends) == 0 else { return nil }
  for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
  return ends
}

/// Writes to a file descriptor directly: Swift 6 treats C's `stdout` and `stderr` as shared
/// mutable state.
func writeText(_ text: String, to descriptor: Int32) {
  var bytes = Array(text.utf8)[...]
  while !bytes.isEmpty {
    let n = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    if n < 0 && errno == EINTR { continue }
    if n <= 0 { return }
    bytes = bytes.dropFirst(n)
  }
}
