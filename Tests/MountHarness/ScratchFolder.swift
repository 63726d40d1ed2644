import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Scratch folders on the real disk for in-process tests, removed when the test process exits:
/// each run made a few hundred of them under /var/tmp and left them there.
public enum ScratchFolder {
  private static let made = Mutex<[String]>([])
  private static let removal: Void = { atexit { ScratchFolder.removeAll() } }()

  /// A new empty folder `/var/tmp/<prefix>-XXXXXX` (not /tmp, which may be a tmpfs).
  public static func make(_ prefix: String) -> String {
    _ = removal
    var template = Array("/var/tmp/\(prefix)-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed: \(errno)")
    let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    Self.made.withLock { $0.append(path) }
    return path
  }

  private static func removeAll() {
    for path in made.withLock({ $0 }) {
      try? FileManager.default.removeItem(atPath: path)
    }
  }
}
