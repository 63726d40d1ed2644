import Foundation
import GRDB
import Glibc

extension LocalStore {
  /// Whether SQLite's answer says the database file no longer holds what it wrote.
  static func meansDamage(_ error: DatabaseError) -> Bool {
    error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
  }

  /// Whether opening the file at `path` failed on its header: a file this process may write
  /// that SQLite calls read-only, or of a format it does not know, was not made so by SQLite.
  static func headerIsDamaged(_ error: DatabaseError, _ path: String) -> Bool {
    if error.resultCode == .SQLITE_READONLY { return access(path, W_OK) == 0 }
    return error.message == "unsupported file format"
  }

  /// What a failed commit says in `docsync status`: for damage, also what mends it.
  static func failureText(_ error: any Error) -> String {
    guard let error = error as? DatabaseError, meansDamage(error) else { return "\(error)" }
    return "it is damaged (\(error.message ?? "\(error.resultCode)")); unmount and mount again, "
      + "which rebuilds it from the hub"
  }

  /// Moves a damaged state database, and the working files its tree named, out of the way into
  /// `damaged-<UTC time>/` in the state folder, so that a new state starts there; the blobs
  /// stay, each checked against its hash when used. Renames only, into a folder renamed whole
  /// at the end; ``finishSettingAside(directory:at:)`` completes one a crash cut short.
  public static func setAside(directory: String, at time: Date = Date()) throws(LocalStoreError)
    -> SetAsideState
  {
    finishSettingAside(directory: directory, at: time)
    let making = directory + "/" + settingAside
    guard mkdir(making, 0o700) == 0 else {
      throw .unusable(making, String(cString: strerror(errno)))
    }
    // The database last: a crash before it leaves it where the next start finds it damaged
    // again, and sets it aside then.
    for file in ["files", "state.sqlite-wal", "state.sqlite-shm", "state.sqlite"] {
      if rename(directory + "/" + file, making + "/" + file) != 0 && errno != ENOENT {
        throw .unusable(directory + "/" + file, String(cString: strerror(errno)))
      }
    }
    syncFolder(making)
    let aside = asideName(directory, at: time)
    guard rename(making, aside) == 0 else {
      throw .unusable(aside, String(cString: strerror(errno)))
    }
    syncFolder(directory)
    return SetAsideState(path: aside)
  }

  /// Gives a setting aside that a crash cut short its `damaged-<time>` name, with whatever it
  /// holds, before the state is opened: its database may hold records the hub lacks.
  public static func finishSettingAside(directory: String, at time: Date = Date()) {
    let making = directory + "/" + settingAside
    guard access(making, F_OK) == 0, rename(making, asideName(directory, at: time)) == 0 else {
      return
    }
    syncFolder(directory)
  }

  private static let settingAside = ".setting-aside"

  /// A `damaged-<UTC time>` path in `directory` that does not exist yet.
  private static func asideName(_ directory: String, at time: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd'T'HH.mm.ss'Z'"
    let stem = directory + "/damaged-" + formatter.string(from: time)
    var name = stem
    var suffix = 1
    while access(name, F_OK) == 0 {
      suffix += 1
      name = stem + "-\(suffix)"
    }
    return name
  }

  /// The set-aside states in `directory` whose unsynced records have not reached the hub yet,
  /// oldest first.
  public static func statesToRecover(in directory: String) -> [SetAsideState] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return names.filter { $0.hasPrefix("damaged-") }.sorted()
      .map { SetAsideState(path: directory + "/" + $0) }
      .filter { !$0.isRecovered }
  }

  static func syncFolder(_ path: String) {
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = fsync(fd)
    close(fd)
  }
}
