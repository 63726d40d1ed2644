import Foundation
import GRDB
import Glibc

/// A damaged state, set aside by ``LocalStore/setAside(directory:at:)``: what can still be
/// read of it, for the records it had not sent to the hub.
public struct SetAsideState: Sendable {
  /// Its folder, `damaged-<UTC time>` in the state folder.
  public let path: String

  public init(path: String) {
    self.path = path
  }

  /// Whether its unsynced records have reached the hub (``markRecovered()``).
  public var isRecovered: Bool { access(path + "/recovered", F_OK) == 0 }

  /// Notes, durably, that its unsynced records are on the hub: the next mount does not look
  /// at it again.
  public func markRecovered() throws(LocalStoreError) {
    let fd = open(path + "/recovered", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw .unusable(path, String(cString: strerror(errno))) }
    _ = fsync(fd)
    close(fd)
    LocalStore.syncFolder(path)
  }

  /// The records of its outbox (id and canonical encoding, oldest first) that can still be
  /// read, and what stopped the reading when it stopped early. Nothing read here is trusted:
  /// the caller checks each record against its id.
  public func unsyncedRecords() -> (records: [(id: [UInt8], payload: [UInt8])], problem: String?) {
    var records: [(id: [UInt8], payload: [UInt8])] = []
    do {
      var configuration = Configuration()
      configuration.prepareDatabase { db in
        // No `-shm` file beside a database nobody else opens.
        try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
      }
      let queue = try DatabaseQueue(path: path + "/state.sqlite", configuration: configuration)
      defer { try? queue.close() }
      try queue.read { db in
        let rows = try Row.fetchCursor(
          db,
          sql: """
            SELECT outbox.id, versions.payload FROM outbox JOIN versions ON versions.id = outbox.id
            ORDER BY outbox.seq
            """)
        while let row = try rows.next() {
          let id: [UInt8] = Array(row[0] as Data? ?? Data())
          let payload: [UInt8] = Array(row[1] as Data? ?? Data())
          records.append((id, payload))
        }
      }
      return (records, nil)
    } catch let error as DatabaseError {
      return (records, error.message ?? "\(error)")
    } catch {
      return (records, "\(error)")
    }
  }

  /// Its working files by size: where the content of an unsynced record may be found when no
  /// blob holds it. One pass over the folder, whatever the number of records.
  public func workingFilesBySize() -> [UInt64: [String]] {
    var found: [UInt64: [String]] = [:]
    let files = path + "/files"
    for shard in (try? FileManager.default.contentsOfDirectory(atPath: files)) ?? [] {
      let folder = files + "/" + shard
      for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
        var info = stat()
        let file = folder + "/" + name
        if lstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
          found[UInt64(info.st_size), default: []].append(file)
        }
      }
    }
    return found
  }
}
