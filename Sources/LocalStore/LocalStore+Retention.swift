import Foundation
import GRDB

extension LocalStore {
  /// Notes versions whose content retention let go, in one transaction.
  public func addReleased(_ ids: [[UInt8]]) throws(LocalStoreError) {
    do {
      try database.write { db in
        var paths: Set<Data> = []
        for id in ids {
          try db.cachedStatement(sql: "INSERT OR IGNORE INTO released (id) VALUES (?)").execute(
            arguments: [Data(id)])
          if let path = try Data.fetchOne(
            db, sql: "SELECT path FROM versions WHERE id = ?", arguments: [Data(id)])
          {
            paths.insert(path)
          }
        }
        try Self.dropEmptyHistoryPaths(Array(paths), in: db)
      }
    } catch {
      throw .failed("\(error)")
    }
  }

  /// The versions whose content retention let go.
  public func loadReleased() throws(LocalStoreError) -> [[UInt8]] {
    do {
      return try database.read { db in
        try Data.fetchAll(db, sql: "SELECT id FROM released").map { [UInt8]($0) }
      }
    } catch {
      throw .failed("\(error)")
    }
  }

  /// Gives the database's free pages back to the file system: an incremental vacuum once the
  /// file is in that mode; the first time, one VACUUM converts it (a state folder made before
  /// retention has auto_vacuum off). The state database holds records and the tree, not
  /// content, so that one VACUUM is short; the write-ahead log is truncated after it.
  public func reclaimSpace() throws(LocalStoreError) {
    do {
      try database.writeWithoutTransaction { db in
        let mode = try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0
        if mode == 2 {
          try db.execute(sql: "PRAGMA incremental_vacuum")
        } else {
          try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
          try db.execute(sql: "VACUUM")
        }
        _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
      }
    } catch {
      throw .failed("\(error)")
    }
  }
}
