import Foundation
import GRDB

extension SQLiteHub {
  public func retention() async throws(HubError) -> String? {
    try await read { db in
      try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = 'retention'")
    }
  }

  public func setRetention(_ serialized: String) async throws(HubError) {
    try await write { db in
      try db.execute(
        sql: "INSERT OR REPLACE INTO settings (key, value) VALUES ('retention', ?)",
        arguments: [serialized])
    }
  }

  /// Drops what the records name (their rows in record_blobs) and the blobs (chunks, upload,
  /// blob rows) no record names any more, in one transaction; then gives the space back to the
  /// file system (see `reclaimSpace`).
  public func prune(records ids: [[UInt8]]) async throws(HubError) {
    if ids.isEmpty { return }
    try await write { db in
      var hashes: Set<Data> = []
      for id in ids {
        guard
          let seq = try Int64.fetchOne(
            db, sql: "SELECT seq FROM records WHERE id = ?", arguments: [Data(id)])
        else { continue }
        for hash in try Data.fetchAll(
          db, sql: "SELECT hash FROM record_blobs WHERE seq = ?", arguments: [seq])
        {
          hashes.insert(hash)
        }
        try db.execute(sql: "DELETE FROM record_blobs WHERE seq = ?", arguments: [seq])
      }
      for hash in hashes {
        let named =
          try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM record_blobs WHERE hash = ?)",
            arguments: [hash]) ?? true
        if named { continue }
        for upload in try Int64.fetchAll(
          db, sql: "SELECT id FROM uploads WHERE hash = ?", arguments: [hash])
        {
          try db.execute(sql: "DELETE FROM chunks WHERE upload = ?", arguments: [upload])
        }
        try db.execute(sql: "DELETE FROM blobs WHERE hash = ?", arguments: [hash])
        try db.execute(sql: "DELETE FROM uploads WHERE hash = ?", arguments: [hash])
      }
    }
    try await reclaimSpace()
  }

  /// Shrinks the hub's file: an incremental vacuum once the file is in that mode; the first
  /// time, one VACUUM converts it (a hub made before retention has auto_vacuum off, which only a
  /// VACUUM changes). Then the write-ahead log is truncated, since a VACUUM passes through it.
  func reclaimSpace() async throws(HubError) {
    do {
      try await pool.writeWithoutTransaction { db in
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
      throw HubError(database: error)
    }
  }
}
