import Glibc
import Synchronization

/// Where log lines go: stderr, until a daemon names its log file.
///
/// A daemon's stderr is the pipe its starter reads until the mount is ready, and the starter
/// passes on only warnings: the engine's first lines (records ignored at start, an unfinished
/// apply settled) went there and were lost. The daemon opens its log before it makes the engine
/// and sends every line there from the first; stderr stays for the starter.
struct LogOutput: TextOutputStream, Sendable {
  private static let descriptor = Mutex<Int32>(2)

  /// Sends every later log line to the end of the file at `path`; false when it cannot be
  /// opened (the lines then stay on stderr).
  static func append(to path: String) -> Bool {
    let log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    guard log >= 0 else { return false }
    let previous = descriptor.withLock { current in
      defer { current = log }
      return current
    }
    if previous > 2 { close(previous) }
    return true
  }

  func write(_ string: String) {
    // Held while writing, so that a line is never written to a descriptor closed meanwhile.
    Self.descriptor.withLock { writeText(string, to: $0) }
  }
}
