import Foundation
import GRDB
import Glibc

/// What the local tree showed for a path when it last matched a version: the version's id and
/// the working file's size and times then, so a later change is noticed without hashing.
public struct ShownRecord: Sendable, Equatable {
  public var path: [UInt8]
  public var versionID: [UInt8]
  public var size: Int64
  public var modificationTime: Int64
  public var changeTime: Int64

  public init(
    path: [UInt8], versionID: [UInt8], size: Int64, modificationTime: Int64, changeTime: Int64
  ) {
    self.path = path
    self.versionID = versionID
    self.size = size
    self.modificationTime = modificationTime
    self.changeTime = changeTime
  }
}

/// The sync engine's durable state, loaded at mount.
///
/// What is kept per path (what the tree showed, which paths have history) is not in it: the
/// engine reads those rows one at a time (`loadShown`, `loadHistoryPaths`), so that a large
/// library's rows are never all in memory beside what the engine makes of them.
public struct SyncSnapshot: Sendable {
  /// Ids of records not yet on the hub, oldest first.
  public var outbox: [[UInt8]] = []
  public var metadata: [String: [UInt8]] = [:]
  /// Remote changes that were being applied when the last run ended.
  public var intents: [ApplyIntent] = []
}

/// One change to the sync engine's durable state.
public enum SyncChange: Sendable {
  case addVersion(StoredVersion)
  /// Drops a version for good (`docsync forget`): its record, its place in the outbox, its
  /// mark as released, and what the indexes derived from it.
  case removeVersion(id: [UInt8])
  case enqueue(id: [UInt8])
  case dequeue(id: [UInt8])
  case show(ShownRecord)
  case unshow(path: [UInt8])
  case setMetadata(key: String, value: [UInt8])
  case beginApply(ApplyIntent)
  case endApply(path: [UInt8])
}

extension LocalStore {
  /// Loads what the sync engine keeps, and hands it the heads of every path (the versions no
  /// stored version follows: id and canonical encoding) one at a time, so that their encodings
  /// are never all in memory at once. Older records stay on disk (`StoredVersion`).
  public func loadSync(eachHead: (_ id: [UInt8], _ payload: [UInt8]) -> Void = { _, _ in })
    throws(LocalStoreError) -> SyncSnapshot
  {
    do {
      return try database.read { db in
        var snapshot = SyncSnapshot()
        let heads = try Row.fetchCursor(
          db, sql: "SELECT v.id, v.payload FROM heads h JOIN versions v ON v.id = h.id")
        while let row = try heads.next() {
          eachHead([UInt8](row[0] as Data), [UInt8](row[1] as Data))
        }
        let outboxRows = try Row.fetchCursor(db, sql: "SELECT id FROM outbox ORDER BY seq")
        while let row = try outboxRows.next() {
          snapshot.outbox.append([UInt8](row[0] as Data))
        }
        let metadataRows = try Row.fetchCursor(db, sql: "SELECT key, value FROM sync_meta")
        while let row = try metadataRows.next() {
          snapshot.metadata[row[0]] = [UInt8](row[1] as Data)
        }
        let intentRows = try Row.fetchCursor(db, sql: "SELECT path, id, hash FROM applying")
        while let row = try intentRows.next() {
          snapshot.intents.append(
            ApplyIntent(
              path: [UInt8](row[0] as Data), versionID: [UInt8](row[1] as Data),
              contentHash: [UInt8](row[2] as Data)))
        }
        return snapshot
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// Hands over what the tree showed for each path, one row at a time.
  public func loadShown(_ each: (ShownRecord) -> Void) throws(LocalStoreError) {
    do {
      try database.read { db in
        let rows = try Row.fetchCursor(db, sql: "SELECT path, id, size, mtime, ctime FROM shown")
        while let row = try rows.next() {
          each(
            ShownRecord(
              path: [UInt8](row[0] as Data), versionID: [UInt8](row[1] as Data),
              size: row[2], modificationTime: row[3], changeTime: row[4]))
        }
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// Hands over the paths that have earlier versions `.history` shows, one at a time.
  public func loadHistoryPaths(_ each: ([UInt8]) -> Void) throws(LocalStoreError) {
    do {
      try database.read { db in
        let paths = try Data.fetchCursor(db, sql: "SELECT path FROM history_paths")
        while let path = try paths.next() { each([UInt8](path)) }
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// Applies sync changes in one transaction.
  public func applySync(_ changes: [SyncChange]) throws(LocalStoreError) {
    do {
      try database.write { db in
        for change in changes {
          switch change {
          case .addVersion(let version):
            try Self.add(version, in: db)
          case .removeVersion(let id):
            try Self.remove(id, in: db)
          case .enqueue(let id):
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO outbox (id) VALUES (?)")
              .execute(arguments: [Data(id)])
          case .dequeue(let id):
            try db.cachedStatement(sql: "DELETE FROM outbox WHERE id = ?").execute(arguments: [
              Data(id)
            ])
          case .show(let record):
            try db.cachedStatement(
              sql:
                "INSERT OR REPLACE INTO shown (path, id, size, mtime, ctime) VALUES (?, ?, ?, ?, ?)"
            ).execute(arguments: [
              Data(record.path), Data(record.versionID), record.size, record.modificationTime,
              record.changeTime,
            ])
          case .unshow(let path):
            try db.cachedStatement(sql: "DELETE FROM shown WHERE path = ?").execute(arguments: [
              Data(path)
            ])
          case .setMetadata(let key, let value):
            try db.cachedStatement(
              sql: "INSERT OR REPLACE INTO sync_meta (key, value) VALUES (?, ?)"
            ).execute(arguments: [key, Data(value)])
          case .beginApply(let intent):
            try db.cachedStatement(
              sql: "INSERT OR REPLACE INTO applying (path, id, hash) VALUES (?, ?, ?)"
            ).execute(arguments: [
              Data(intent.path), Data(intent.versionID), Data(intent.contentHash),
            ])
          case .endApply(let path):
            try db.cachedStatement(sql: "DELETE FROM applying WHERE path = ?").execute(
              arguments: [Data(path)])
          }
        }
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// The folder of content-addressed blobs: `blobs/<first two hex digits>/<hex>`.
  public var blobFolder: String { content.folder }

  /// The path of a blob by its hex hash (for a recovery that reads a state set aside, and for
  /// tests that damage a blob on purpose).
  public func blobPath(hex: String) -> String { content.blobPath(hex: hex) }
}
