import ArgumentParser
import Foundation
import Glibc
import Logging
import Synchronization

/// The log level `--log-level` chose; loggers take it when they are made.
let logLevelSetting = Mutex<Logger.Level>(.info)

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// The hub a state folder belongs to, kept in `STATE/hub` from its first mount.
///
/// A state folder holds one library's versions and what this device has shown of them; synced
/// with another hub, it would push one library's documents into another's. A hub that vanished
/// is refused too, rather than recreated empty: the documents would then only live here.
struct LibraryRecord {
  let file: String

  init(stateFolder: String) { file = stateFolder + "/hub" }

  func check(hub location: String) throws {
    guard let recorded = readTextFile(file)?.trimmingCharacters(in: "\n"), !recorded.isEmpty
    else { return }
    let wanted = Self.identity(location)
    if recorded != wanted {
      throw CommandFailure(
        "state folder \((file as NSString).deletingLastPathComponent) belongs to the library "
          + "on hub \(recorded), not \(wanted): mount with --hub \(shellQuoted(recorded)), or "
          + "give another --state for a new device of that library")
    }
    if !Self.isURL(recorded), access(recorded, F_OK) != 0 {
      throw CommandFailure(
        "the hub \(recorded) of this library is missing: restore it (or its folder), "
          + "or give another --state to start on a new hub")
    }
  }

  /// Whether this state folder has been mounted on its hub before.
  var isRecorded: Bool { readTextFile(file) != nil }

  func record(hub location: String) {
    guard readTextFile(file) == nil else { return }
    writeFile(file, Self.identity(location) + "\n")
  }

  /// The same hub, spelt the same way: an absolute, symlink-free file path, or a URL without
  /// its options (`?sslmode=` may change, the database may not).
  static func identity(_ location: String) -> String {
    if isURL(location) {
      return String(shown(location).prefix { $0 != "?" })
    }
    var path = location
    if path == "~" || path.hasPrefix("~/") {
      path = FileManager.default.homeDirectoryForCurrentUser.path + path.dropFirst()
    }
    let absolute = URL(fileURLWithPath: path).standardizedFileURL.path as NSString
    if let real = resolvedPath(absolute as String) { return real }
    if let folder = resolvedPath(absolute.deletingLastPathComponent) {
      return (folder == "/" ? "" : folder) + "/" + absolute.lastPathComponent
    }
    return absolute as String
  }

  static func isURL(_ location: String) -> Bool { location.contains("://") }

  /// The hub as `status` shows it: a file as an absolute path, a URL never with a password.
  static func shown(_ location: String) -> String {
    guard isURL(location) else { return identity(location) }
    guard var components = URLComponents(string: location), components.password != nil
    else { return location }
    components.password = nil
    return components.string ?? location
  }
}
