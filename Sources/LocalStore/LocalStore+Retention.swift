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
      throw LocalStoreError(error)
    }
  }

  /// The versions whose content retention let go.
  public func loadReleased() throws(LocalStoreError) -> [[UInt8]] {
    do {
      return try database.read { db in
        try Data.fetchAll(db, sql: "SELECT id FROM released").map { [UInt8]($0) }
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// Gives the database's free pages back to the file system by an incremental vacuum, and
  /// truncates the write-ahead log. A state database made before retention has auto_vacuum
  /// off and keeps its free pages for reuse until ``convertToIncrementalVacuum()``: a full
  /// VACUUM here would hold the database, and with it the file system's requests that record
  /// something, for as long as it copies the whole file.
  public func reclaimSpace() throws(LocalStoreError) {
    // The journal is truncated: its next pages are new blocks, flushed by its own fdatasync.
    sharedFlush?.journalWillShrink()
    defer { sharedFlush?.journalShrank() }
    do {
      try database.writeWithoutTransaction { db in
        let mode = try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0
        if mode == 2 {
          try db.execute(sql: "PRAGMA incremental_vacuum")
        }
        _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// Puts a state database made before retention in incremental vacuum mode, with the one full
  /// VACUUM that takes; true when it did. Called when nobody waits on the database: as a mount
  /// stops, after its file system has been unmounted.
  public func convertToIncrementalVacuum() throws(LocalStoreError) -> Bool {
    // The journal is truncated: its next pages are new blocks, flushed by its own fdatasync.
    sharedFlush?.journalWillShrink()
    defer { sharedFlush?.journalShrank() }
    do {
      return try database.writeWithoutTransaction { db in
        let mode = try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0
        if mode == 2 { return false }
        try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
        try db.execute(sql: "VACUUM")
        _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        return true
      }
    } catch {
      throw LocalStoreError(error)
    }
  }
}
