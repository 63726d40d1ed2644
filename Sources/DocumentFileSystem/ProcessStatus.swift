import Glibc

/// Reads a process's `/proc/PID/status`, where the kernel shows what no system call reads
/// without changing it (the umask) or for another process (its supplementary groups).
enum ProcessStatus {
  /// The value after `name:` in the status of `process` ("self" or a pid), with its blanks
  /// trimmed; nil when the process or the field is not there.
  static func field(_ name: String, of process: String) -> String? {
    let fd = open("/proc/\(process)/status", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let n = read(fd, &buffer, buffer.count)
      if n <= 0 { break }
      bytes += buffer[0..<n]
    }
    let prefix = name + ":"
    for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n")
    where line.hasPrefix(prefix) {
      return String(line.dropFirst(prefix.count).drop { $0 == " " || $0 == "\t" })
    }
    return nil
  }
}
