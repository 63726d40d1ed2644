/// Signals when one of some files in a folder is written, created or renamed into place, by
/// this process or another (inotify): how the processes sharing a SQLite hub learn of each
/// other's commits without polling the database. A subscription to ``SharedInotify``, ended
/// when it goes away.
final class FileChangeWatcher: Sendable {
  private let watch: Int32
  private let id: Int

  /// Nil when inotify is unavailable (no descriptors left, or a kernel without it): the caller
  /// then polls.
  init?(directory: String, names: Set<String>, signal: ChangeSignal) {
    guard
      let (watch, id) = SharedInotify.shared.subscribe(
        directory: directory, names: names, signal: signal)
    else { return nil }
    self.watch = watch
    self.id = id
  }

  deinit { SharedInotify.shared.unsubscribe(watch: watch, id: id) }
}
