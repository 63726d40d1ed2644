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
  /// stay, each checked against its hash when used. Renames only: nothing is copied, and a
  /// crash leaves either the damaged state where it was or all of it set aside.
  public static func setAside(directory: String, at time: Date = Date()) throws(LocalStoreError)
    -> SetAsideState
  {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd'T'HH.mm.ss'Z'"
    var name = "damaged-" + formatter.string(from: time)
    var suffix = 1
    while access(directory + "/" + name, F_OK) == 0 {
      suffix += 1
      name = "damaged-" + formatter.string(from: time) + "-\(suffix)"
    }
    let aside = directory + "/" + name
    // Made under a temporary name and renamed whole, so that a set-aside folder always holds
    // the database it was made for.
    let making = directory + "/.setting-aside"
    _ = try? FileManager.default.removeItem(atPath: making)
    guard mkdir(making, 0o700) == 0 else {
      throw .unusable(making, String(cString: strerror(errno)))
    }
    for file in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm", "files"] {
      if rename(directory + "/" + file, making + "/" + file) != 0 && errno != ENOENT {
        throw .unusable(directory + "/" + file, String(cString: strerror(errno)))
      }
    }
    syncFolder(making)
    guard rename(making, aside) == 0 else {
      throw .unusable(aside, String(cString: strerror(errno)))
    }
    syncFolder(directory)
    return SetAsideState(path: aside)
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
