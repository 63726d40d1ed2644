import Crypto
import Foundation
import GRDB

// A blob damaged in the hub file is repaired by the devices: one that fetched bytes failing
// their hash reports it, the hub checks its own copy (here, in the hub code: the SQLite hub has
// no server), drops it only when it is damaged, and lists the hash in `wanted`; a device holding
// verified content puts it again, and `putBlob` checks every byte against the key as it does
// for any blob.

extension SQLiteHub {
  /// The schema step that lists wanted blobs. Registered after the first step; released steps
  /// are never edited.
  static func registerRepairMigration(_ migrator: inout DatabaseMigrator) {
    migrator.registerMigration("v2 wanted blobs") { db in
      try db.execute(
        sql: """
          -- Hashes the hub asks its devices to put again: dropped as damaged, or missing while
          -- a record names them. A put of the blob removes its row.
          CREATE TABLE wanted (
            hash BLOB PRIMARY KEY,
            since REAL NOT NULL
          ) WITHOUT ROWID;
          """)
    }
  }

  public func reportDamagedBlob(hash: [UInt8]) async throws(HubError) -> BlobCondition {
    guard hash.count == 32 else { return .unknown }
    let stored = try await read { db in try Self.storedBlobLocked(hash, db) }
    if let stored, try await isIntact(hash, stored) { return .intact }
    let condition = try await write { db -> BlobCondition in
      let now = try Self.storedBlobLocked(hash, db)
      if let stored {
        // Another process may have replaced the copy since it was read: judge only that one.
        guard now?.upload == stored.upload else { return now == nil ? .wanted : .intact }
        try db.execute(sql: "DELETE FROM blobs WHERE hash = ?", arguments: [Data(hash)])
        try Self.discard(upload: stored.upload, db)
      } else if now != nil {
        return .intact
      } else if try Bool.fetchOne(
        db, sql: "SELECT EXISTS (SELECT 1 FROM blob_twins WHERE hash = ?)",
        arguments: [Data(hash)]) == true
      {
        // Converted: its content is whole as objects (see blobRoots), nothing to put again.
        return .intact
      } else {
        let wanted =
          try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM wanted WHERE hash = ?)",
            arguments: [Data(hash)]) ?? false
        let named =
          try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM record_blobs WHERE hash = ?)",
            arguments: [Data(hash)]) ?? false
        if !wanted && !named { return .unknown }
      }
      try db.execute(
        sql: "INSERT OR IGNORE INTO wanted (hash, since) VALUES (?, ?)",
        arguments: [Data(hash), Date().timeIntervalSince1970])
      return .wanted
    }
    if stored?.file == true { try await removeBlobFiles([Data(hash)]) }
    return condition
  }

  public func wantedBlobs() async throws(HubError) -> [[UInt8]] {
    try await read { db in
      try Data.fetchAll(db, sql: "SELECT hash FROM wanted ORDER BY hash").map { Array($0) }
    }
  }

  /// Whether the stored file or chunks of `stored` are the blob `hash`: read as a fetch reads
  /// them, chunks one at a time in separate transactions.
  private func isIntact(_ hash: [UInt8], _ stored: (size: Int64, upload: Int64, file: Bool))
    async throws(HubError) -> Bool
  {
    if stored.file {
      guard let (size, digest) = try? blobFolder.read(hash, to: nil) else { return false }
      return size == stored.size && digest == hash
    }
    var hasher = SHA256()
    var size: Int64 = 0
    try await forEachChunk(of: stored.upload) { chunk in
      hasher.update(data: chunk)
      size += Int64(chunk.count)
    }
    return size == stored.size && Array(hasher.finalize()) == hash
  }
}
