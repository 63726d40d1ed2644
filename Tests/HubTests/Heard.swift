import Synchronization

/// Who heard a notification, from the listeners' tasks.
final class Heard: Sendable {
  private let heard = Mutex<[String]>([])
  func add(_ name: String) { heard.withLock { $0.append(name) } }
  var names: [String] { heard.withLock { $0 } }
}
