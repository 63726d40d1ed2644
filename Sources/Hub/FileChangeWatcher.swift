import Dispatch
import Glibc

/// Signals when one of some files in a folder is written, created or renamed into place, by
/// this process or another (inotify): how the processes sharing a SQLite hub learn of each
/// other's commits without polling the database.
final class FileChangeWatcher: @unchecked Sendable {
  // Immutable after init; a dispatch source may be cancelled from any thread.
  private let source: any DispatchSourceRead

  /// Nil when inotify is unavailable (no descriptors left, or a kernel without it): the caller
  /// then polls.
  init?(directory: String, names: Set<String>, signal: ChangeSignal) {
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    guard fd >= 0 else { return nil }
    let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO)
    guard inotify_add_watch(fd, directory, mask) >= 0 else {
      close(fd)
      return nil
    }
    let wanted = Set(names.map { Array($0.utf8) })
    source = DispatchSource.makeReadSource(
      fileDescriptor: fd, queue: DispatchQueue(label: "docsync.hub.watch"))
    source.setEventHandler {
      if Self.drain(fd, wanted: wanted) {
        signal.signal()
        // A large upload writes the journal thousands of times a second; pausing here lets
        // those events gather into the next drain, so waiters look at most about 200 times a
        // second. The first write of a burst is still signalled at once.
        usleep(Self.pauseMicroseconds)
      }
    }
    source.setCancelHandler { close(fd) }
    source.resume()
  }

  static let pauseMicroseconds: UInt32 = 5_000

  deinit { source.cancel() }

  /// Reads every queued event; true when one names a wanted file.
  private static func drain(_ fd: Int32, wanted: Set<[UInt8]>) -> Bool {
    let headerSize = MemoryLayout<inotify_event>.size
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    var matched = false
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      // EAGAIN once drained; EINTR is retried by the next readiness event.
      guard count > 0 else { return matched }
      var offset = 0
      while offset + headerSize <= count {
        let (mask, nameLength) = buffer.withUnsafeBytes {
          (
            $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
            Int($0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
          )
        }
        let name = buffer[(offset + headerSize)..<min(count, offset + headerSize + nameLength)]
        // An overflowed queue lost events: any of them may have been a commit.
        if mask & UInt32(IN_Q_OVERFLOW) != 0 || wanted.contains(Array(name.prefix { $0 != 0 })) {
          matched = true
        }
        offset += headerSize + nameLength
      }
    }
  }
}
