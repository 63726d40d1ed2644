import ContentModel
import DocumentModel
import Foundation
import GRDB

// Blobs' chunked twins (docs/content-layer.md, "Upgrade"). A blob that a record names is cut
// into objects as a device would cut it (BlobCutter), the objects put through the ordinary
// object path (packs, checks, repair), and then, in one short transaction, the twin recorded
// and the blob's row, upload and chunks dropped; its file goes after the commit, as prune's
// do. The cutting holds no transaction: it reads the blob (a stored blob never changes) and
// puts batches of objects, each its own short write.
//
// Crash-safe at every step: before the transaction the blob is whole and the objects put so
// far are an upload without a record (their grace keeps them a day, a prune after that sweeps
// them, a new attempt finds them present); after it, the twin is whole (its root was checked
// under the same lock, and a hub that has a node has everything under it) and a blob file no
// row names is a leftover the next prune sweeps.

extension SQLiteHub: BlobTwins {
  /// The schema step that keeps blobs' twins. Released steps are never edited.
  static func registerTwinsMigration(_ migrator: inout DatabaseMigrator) {
    migrator.registerMigration("v8 blob twins") { db in
      try db.execute(
        sql: """
          -- hash: a blob's SHA-256 that a record names; root: the id of the object whose tree
          -- holds exactly its bytes (garbage collection marks from it as from a record's
          -- root); reference: DocumentModel's ContentRoot as ContentModel encodes it (id scheme,
          -- height, id, size), what devices are told. The blob's own row is gone once its twin
          -- is here, unless a device put the blob again since (harmless: the next conversion
          -- drops it again). A twin lives while a record names its hash: prune and forget drop
          -- it with the last one.
          CREATE TABLE blob_twins (
            hash BLOB PRIMARY KEY,
            root BLOB NOT NULL,
            reference BLOB NOT NULL
          ) WITHOUT ROWID;
          -- A docsync without twins would find a converted blob missing, report it as damage
          -- and ask every device to put it again: it must refuse this hub file.
          INSERT OR REPLACE INTO settings (key, value) VALUES ('devices_from', '4');
          """)
    }
  }

  public func blobRoots(_ hashes: [[UInt8]]) async throws(HubError) -> [[UInt8]: ContentRoot] {
    guard !hashes.isEmpty else { return [:] }
    return try await read { db in
      let statement = try db.cachedStatement(
        sql: "SELECT reference FROM blob_twins WHERE hash = ?")
      var roots: [[UInt8]: ContentRoot] = [:]
      for hash in hashes {
        guard let encoded = try Data.fetchOne(statement, arguments: [Data(hash)]),
          let root = try? ContentRoot(decoding: Array(encoded))
        else { continue }
        roots[hash] = root
      }
      return roots
    }
  }

  /// Converts up to `limit` blobs that records name, in the order of their hashes after
  /// `after` (nil: from the first), each cut into objects and then exchanged for its twin in
  /// a transaction of its own. Returns what it did, and the hash to go on after (nil when
  /// none is left).
  public func convertBlobs(after: [UInt8]? = nil, limit: Int = 16) async throws(HubError)
    -> TwinBatch
  {
    let start = Data(after ?? [])
    let candidates = try await read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT b.hash, b.size, b.upload, b.file,
            (SELECT reference FROM blob_twins AS t WHERE t.hash = b.hash) AS twin
          FROM blobs AS b
          WHERE b.hash > ? AND EXISTS (SELECT 1 FROM record_blobs AS r WHERE r.hash = b.hash)
          ORDER BY b.hash LIMIT ?
          """, arguments: [start, limit]
      ).map { row in
        (
          hash: Array(row["hash"] as Data), size: row["size"] as Int64,
          upload: row["upload"] as Int64, file: row["file"] as Bool,
          twin: (row["twin"] as Data?).flatMap { try? ContentRoot(decoding: Array($0)) }
        )
      }
    }
    var batch = TwinBatch(next: candidates.count == limit ? candidates.last?.hash : nil)
    for blob in candidates {
      try twinStop.reached(.beforeCutting)
      let root: ContentRoot
      if let twin = blob.twin {
        // Put again by a device since its conversion: the twin stands, the bytes go.
        root = twin
      } else {
        guard let cut = try await cut(blob.hash, upload: blob.upload, file: blob.file),
          cut.digest == blob.hash, cut.size == blob.size
        else {
          // Damaged or lost here: the damage path drops it and wants it from a device (a
          // copy found intact stays, and a later run converts it).
          _ = try? await reportDamagedBlob(hash: blob.hash)
          batch.damaged += 1
          continue
        }
        root = cut.root
      }
      try twinStop.reached(.beforeRecording)
      let recorded = try await write { db -> Bool? in
        // Judged as read: a blob pruned, or damaged and put again, meanwhile is left alone.
        guard let now = try Self.storedBlobLocked(blob.hash, db), now.upload == blob.upload,
          try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM record_blobs WHERE hash = ?)",
            arguments: [Data(blob.hash)]) == true,
          try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM objects WHERE id = ?)",
            arguments: [Data(root.id.bytes)]) == true
        else { return nil }
        try db.execute(
          sql: "INSERT OR IGNORE INTO blob_twins (hash, root, reference) VALUES (?, ?, ?)",
          arguments: [Data(blob.hash), Data(root.id.bytes), Data(root.encoded())])
        for upload in try Int64.fetchAll(
          db, sql: "SELECT id FROM uploads WHERE hash = ?", arguments: [Data(blob.hash)])
        {
          try db.execute(sql: "DELETE FROM chunks WHERE upload = ?", arguments: [upload])
        }
        try db.execute(sql: "DELETE FROM blobs WHERE hash = ?", arguments: [Data(blob.hash)])
        try db.execute(sql: "DELETE FROM uploads WHERE hash = ?", arguments: [Data(blob.hash)])
        return now.file
      }
      guard let file = recorded else {
        batch.skipped += 1
        continue
      }
      try twinStop.reached(.beforeRemovingFile)
      if file { try await removeBlobFiles([Data(blob.hash)]) }
      batch.converted += 1
      batch.bytes += blob.size
    }
    return batch
  }

  /// Converts every blob that records name, batch after batch; returns the totals, and hands
  /// them to `progress` after each batch.
  @discardableResult
  public func convertAllBlobs(
    batchSize: Int = 16, progress: (TwinBatch) -> Void = { _ in }
  ) async throws(HubError) -> TwinBatch {
    var total = TwinBatch(next: nil)
    var after: [UInt8]? = nil
    repeat {
      let batch = try await convertBlobs(after: after, limit: batchSize)
      total.converted += batch.converted
      total.damaged += batch.damaged
      total.skipped += batch.skipped
      total.bytes += batch.bytes
      after = batch.next
      progress(total)
    } while after != nil
    if total.converted > 0 {
      // The blobs' pages back to the file system, as after a prune.
      try await reclaimSpace()
    }
    return total
  }

  /// Reads the stored blob (its file, or its chunks one transaction each) into a cutter; nil
  /// when it cannot be read.
  private func cut(_ hash: [UInt8], upload: Int64, file: Bool) async throws(HubError) -> (
    root: ContentRoot, digest: [UInt8], size: Int64
  )? {
    var cutter = BlobCutter(store: self)
    if file {
      guard let fd = blobFolder.openForReading(hash) else { return nil }
      defer { close(fd) }
      var offset: Int64 = 0
      while true {
        guard
          let bytes = try? BlobFile.readChunk(fd, at: offset, count: Self.chunkSize, of: .hub)
        else { return nil }
        if bytes.isEmpty { break }
        try await cutter.append(bytes)
        offset += Int64(bytes.count)
      }
    } else {
      try await forEachChunk(of: upload) { chunk throws(HubError) in
        try await cutter.append(Array(chunk))
      }
    }
    return try await cutter.finish()
  }

  /// Converts the blobs records name in the background, in this process: a first run after
  /// `delay` (a mount starting is busy with its first sync), then one every `interval`, for
  /// the blobs that records from any process (a merge, a device that moves blobs) named
  /// meanwhile; one that finds nothing is a lookup in the blobs table, which holds only
  /// what is not converted yet. Each blob's transaction is short and the cutting holds none,
  /// so mounts sharing the hub go on writing meanwhile. A failed run is tried again at the
  /// next.
  /// `report` hears how each run went, for the mount's log.
  public func convertInBackground(
    after delay: Duration = .seconds(10), interval: Duration = .seconds(60),
    report: @escaping @Sendable (Result<TwinBatch, HubError>) -> Void = { _ in }
  ) {
    guard twinSchedule.start() else { return }
    Task.detached(priority: .background) { [weak self] in
      var wait = delay
      while !Task.isCancelled {
        try? await Task.sleep(for: wait)
        guard let self else { return }
        do throws(HubError) {
          report(.success(try await self.convertAllBlobs()))
        } catch {
          report(.failure(error))
        }
        wait = interval
      }
    }
  }

  /// Drops the twins of `hashes` that no record names any more; returns their roots, whose
  /// objects the same transaction's sweep frees at once. Holding the write lock.
  static func dropUnnamedTwins(_ hashes: Set<Data>, _ db: Database) throws -> Set<Data> {
    var roots: Set<Data> = []
    for hash in hashes {
      guard
        let root = try Data.fetchOne(
          db, sql: "SELECT root FROM blob_twins WHERE hash = ?", arguments: [hash])
      else { continue }
      let named =
        try Bool.fetchOne(
          db, sql: "SELECT EXISTS (SELECT 1 FROM record_blobs WHERE hash = ?)",
          arguments: [hash]) ?? true
      if named { continue }
      try db.execute(sql: "DELETE FROM blob_twins WHERE hash = ?", arguments: [hash])
      roots.insert(root)
    }
    return roots
  }
}
