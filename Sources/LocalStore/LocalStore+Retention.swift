import Foundation
import GRDB

extension LocalStore {
  /// Forgets version records that retention let go, in one transaction.
  public func removeVersions(_ ids: [[UInt8]]) throws(LocalStoreError) {
    do {
      try database.write { db in
        for id in ids {
          try db.cachedStatement(sql: "DELETE FROM versions WHERE id = ?").execute(arguments: [
            Data(id)
          ])
        }
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
