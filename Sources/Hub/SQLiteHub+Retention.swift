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
  /// blob rows) no record names any more, and lists the records released, in one transaction;
  /// then gives the space back to the file system (see `reclaimSpace`, `compactPacks`). A
  /// released blob the hub wanted back leaves that list too (see `dropUnnamed`).
  public func prune(records ids: [[UInt8]]) async throws(HubError) {
    if ids.isEmpty { return }
    let cutoff = Int64(Date().timeIntervalSince1970) - Self.objectGrace
    let dropped = try await write { db in
      var hashes: Set<Data> = []
      for id in ids {
        guard
          let seq = try Int64.fetchOne(
            db, sql: "SELECT seq FROM records WHERE id = ?", arguments: [Data(id)])
        else { continue }
        let named = try Data.fetchAll(
          db, sql: "SELECT hash FROM record_blobs WHERE seq = ?", arguments: [seq])
        if named.isEmpty { continue }
        hashes.formUnion(named)
        try db.execute(sql: "DELETE FROM record_blobs WHERE seq = ?", arguments: [seq])
        try db.execute(
          sql: "INSERT INTO erasures (id, forgotten) VALUES (?, 0)", arguments: [Data(id)])
      }
      let dropped = try Self.dropUnnamed(hashes, db)
      // A twin's objects go with the last record naming its blob, as a root's do.
      let twins = try Self.dropUnnamedTwins(hashes, db)
      _ = try Self.sweepObjects(db, touchedBefore: cutoff, released: hashes.union(twins))
      return dropped
    }
    try await removeBlobFiles(dropped)
    try await reclaimSpace()
    await sweepBlobFiles(olderThan: 86_400)
    try await compactPacks()
  }

  /// Deletes the records, what they name, and the blobs no record names any more, and lists
  /// the records forgotten, in one transaction (a wanted blob leaves that list, as in `prune`).
  public func forget(records ids: [[UInt8]]) async throws(HubError) {
    if ids.isEmpty { return }
    let cutoff = Int64(Date().timeIntervalSince1970) - Self.objectGrace
    let dropped = try await write { db in
      var hashes: Set<Data> = []
      for id in ids {
        guard
          let seq = try Int64.fetchOne(
            db, sql: "SELECT seq FROM records WHERE id = ?", arguments: [Data(id)])
        else { continue }
        hashes.formUnion(
          try Data.fetchAll(
            db, sql: "SELECT hash FROM record_blobs WHERE seq = ?", arguments: [seq]))
        try db.execute(sql: "DELETE FROM record_blobs WHERE seq = ?", arguments: [seq])
        try db.execute(sql: "DELETE FROM records WHERE seq = ?", arguments: [seq])
        try db.execute(
          sql: "INSERT INTO erasures (id, forgotten) VALUES (?, 1)", arguments: [Data(id)])
      }
      let dropped = try Self.dropUnnamed(hashes, db)
      // A twin's objects go with the last record naming its blob, as a root's do.
      let twins = try Self.dropUnnamedTwins(hashes, db)
      _ = try Self.sweepObjects(db, touchedBefore: cutoff, released: hashes.union(twins))
      return dropped
    }
    try await removeBlobFiles(dropped)
    try await reclaimSpace()
    await sweepBlobFiles(olderThan: 86_400)
    try await compactPacks()
  }

  public func erasures(after cursor: HubCursor, limit: Int) async throws(HubError) -> ErasurePage {
    guard limit > 0 else {
      throw .failed("a page of erasures needs a positive limit, not \(limit)")
    }
    let after = try Self.sequence(of: cursor)
    return try await read { db in
      let rows = try Row.fetchAll(
        db, sql: "SELECT seq, id, forgotten FROM erasures WHERE seq > ? ORDER BY seq LIMIT ?",
        arguments: [after, limit])
      guard let last = rows.last else { return ErasurePage(erasures: [], cursor: cursor) }
      let erasures = rows.map { row in
        let id: Data = row["id"]
        let forgotten: Bool = row["forgotten"]
        return Erasure(id: [UInt8](id), kind: forgotten ? .forgotten : .released)
      }
      return ErasurePage(erasures: erasures, cursor: Self.cursor(at: last["seq"]))
    }
  }

  /// Deletes those of `hashes` that no record names any more (blob rows, uploads, chunks, and
  /// their place in `wanted`: a device still holding one would put it back as a blob nothing
  /// names, which no later prune looks at). Returns those whose bytes are files, for
  /// `removeBlobFiles` once this transaction has committed.
  static func dropUnnamed(_ hashes: Set<Data>, _ db: Database) throws -> Set<Data> {
    var files: Set<Data> = []
    for hash in hashes {
      let named =
        try Bool.fetchOne(
          db, sql: "SELECT EXISTS (SELECT 1 FROM record_blobs WHERE hash = ?)",
          arguments: [hash]) ?? true
      if named { continue }
      if try storedBlobLocked(Array(hash), db)?.file == true { files.insert(hash) }
      for upload in try Int64.fetchAll(
        db, sql: "SELECT id FROM uploads WHERE hash = ?", arguments: [hash])
      {
        try db.execute(sql: "DELETE FROM chunks WHERE upload = ?", arguments: [upload])
      }
      try db.execute(sql: "DELETE FROM blobs WHERE hash = ?", arguments: [hash])
      try db.execute(sql: "DELETE FROM uploads WHERE hash = ?", arguments: [hash])
      try db.execute(sql: "DELETE FROM wanted WHERE hash = ?", arguments: [hash])
    }
    return files
  }

  /// Shrinks the hub's file by an incremental vacuum, then truncates the write-ahead log.
  ///
  /// A hub made before retention has auto_vacuum off, and only a full VACUUM changes that: it
  /// copies the whole hub (every document's content) while holding the write lock that every
  /// mount sharing the hub waits on, and needs as much free disk again. No mount runs it: in
  /// such a hub the freed pages are reused by what comes next, so the file stops growing, and
  /// the README says how to convert it while no mount runs (new hubs are incremental from
  /// their creation, see `init`).
  func reclaimSpace() async throws(HubError) {
    do {
      try await pool.writeWithoutTransaction { db in
        let mode = try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0
        if mode == 2 {
          try db.execute(sql: "PRAGMA incremental_vacuum")
        }
        _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
      }
    } catch {
      throw HubError(database: error)
    }
  }
}
