import Foundation
import GRDB

// Why a cursor never skips a record that commits late: SQLite lets one writer at a time hold the
// database's write lock, across processes, and `seq` is assigned (max + 1, AUTOINCREMENT) inside
// that locked transaction. A transaction that starts earlier but commits later cannot hold a
// smaller seq than one that committed before it, because it could not write at all until the
// other released the lock. So seq order is commit order, every read transaction sees a prefix of
// it, and "seq > cursor" never passes over a row that appears afterwards. A rolled-back
// transaction leaves a gap in seq, which is harmless.

extension SQLiteHub {
  public func append(_ records: [HubRecord]) async throws(HubError) {
    if records.isEmpty { return }
    try await write { db in
      for record in records {
        let id = Data(record.id)
        if let known = try Data.fetchOne(
          db, sql: "SELECT payload FROM records WHERE id = ?", arguments: [id])
        {
          // Ids are derived from content, so the same id with other bytes is a forgery or a bug
          // on some device: refuse it rather than silently keep one of the two.
          guard known == Data(record.payload) else {
            throw HubError.integrity(
              "record \(hexString(record.id)) is already in the hub with a different payload")
          }
          continue
        }
        for hash in record.blobs {
          let present =
            try Bool.fetchOne(
              db,
              sql: """
                SELECT EXISTS (SELECT 1 FROM blobs WHERE hash = ?1)
                  OR EXISTS (SELECT 1 FROM objects WHERE id = ?1)
                  OR EXISTS (SELECT 1 FROM blob_twins WHERE hash = ?1)
                """,
              arguments: [Data(hash)]) ?? false
          guard present else { throw HubError.missingBlob(hash) }
        }
        try db.execute(
          sql: "INSERT INTO records (id, payload) VALUES (?, ?)",
          arguments: [id, Data(record.payload)])
        let seq = db.lastInsertedRowID
        for (position, hash) in record.blobs.enumerated() {
          try db.execute(
            sql: "INSERT INTO record_blobs (seq, position, hash) VALUES (?, ?, ?)",
            arguments: [seq, position, Data(hash)])
        }
      }
    }
  }

  public func records(after cursor: HubCursor, limit: Int) async throws(HubError) -> HubPage {
    guard limit > 0 else { throw .failed("a page of records needs a positive limit, not \(limit)") }
    let after = try Self.sequence(of: cursor)
    return try await read { db in
      let rows = try Row.fetchAll(
        db, sql: "SELECT seq, id, payload FROM records WHERE seq > ? ORDER BY seq LIMIT ?",
        arguments: [after, limit])
      guard let first = rows.first, let last = rows.last else {
        return HubPage(records: [], cursor: cursor)
      }
      let firstSeq: Int64 = first["seq"]
      let lastSeq: Int64 = last["seq"]
      var blobs: [Int64: [[UInt8]]] = [:]
      let blobRows = try Row.fetchCursor(
        db,
        sql: """
          SELECT seq, hash FROM record_blobs WHERE seq BETWEEN ? AND ? ORDER BY seq, position
          """,
        arguments: [firstSeq, lastSeq])
      while let row = try blobRows.next() {
        blobs[row["seq"], default: []].append(Array(row["hash"] as Data))
      }
      let records = rows.map { row in
        HubRecord(
          id: Array(row["id"] as Data), payload: Array(row["payload"] as Data),
          blobs: blobs[row["seq"]] ?? [])
      }
      return HubPage(records: records, cursor: Self.cursor(at: lastSeq))
    }
  }

  /// Wakes when the database's files change (see ``FileChangeWatcher``), then asks whether a row
  /// exists past the cursor, a lookup in the rowid B-tree. GRDB's own observation cannot serve:
  /// it only sees writes made through the same database object, not other processes' commits.
  /// Without a watcher it polls every ``pollInterval``.
  public func waitForChanges(after cursor: HubCursor, timeout: Duration) async throws(HubError)
    -> Bool
  {
    let after = try Self.sequence(of: cursor)
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    let interval = watcher == nil ? Self.pollInterval : Self.watchedPollInterval
    while true {
      // Read the generation before looking, so a commit in between is not missed.
      let seen = changes.generation
      let changed = try await read { db in
        try Bool.fetchOne(
          db, sql: "SELECT EXISTS (SELECT 1 FROM records WHERE seq > ?)", arguments: [after])
          ?? false
      }
      if changed { return true }
      let left = clock.now.duration(to: deadline)
      if left <= .zero || Task.isCancelled { return false }
      await changes.wait(after: seen, timeout: min(interval, left))
    }
  }

  /// The cursor of a SQLite hub is the decimal seq of the last record seen.
  static func sequence(of cursor: HubCursor) throws(HubError) -> Int64 {
    if cursor.serialized.isEmpty { return 0 }
    guard let seq = Int64(cursor.serialized), seq >= 0 else {
      throw .failed("\"\(cursor.serialized)\" is not a cursor of a SQLite hub")
    }
    return seq
  }

  static func cursor(at seq: Int64) -> HubCursor {
    HubCursor(serialized: String(seq))
  }
}
