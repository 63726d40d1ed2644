import Foundation
import GRDB

extension LocalStore {
  /// Keeps the chunk list of content `hash`: its encoded root and its chunks' entries, as the
  /// content layer encodes them. A cache of what cutting the content gives again: it commits
  /// without a flush, and a row lost in a crash is made again from the content when needed.
  public func storeChunkList(hash: [UInt8], root: [UInt8], entries: [UInt8])
    throws(LocalStoreError)
  {
    try storeChunkLists([(hash, root, entries)])
  }

  /// Keeps several chunk lists in one transaction (the small files of a pull).
  ///
  /// With `keepingOtherSchemes`, a list kept already in another id scheme (its root's first
  /// byte) stays: content cut again as it is recorded names the tree the hub may have already,
  /// so that a copy of content recorded before BLAKE3 uploads nothing.
  public func storeChunkLists(
    _ lists: [(hash: [UInt8], root: [UInt8], entries: [UInt8])], keepingOtherSchemes: Bool = false
  ) throws(LocalStoreError) {
    guard !lists.isEmpty else { return }
    let sql =
      keepingOtherSchemes
      ? """
      INSERT INTO content_chunks (hash, root, entries) VALUES (?, ?, ?)
      ON CONFLICT (hash) DO UPDATE SET root = excluded.root, entries = excluded.entries
      WHERE substr(root, 1, 1) = substr(excluded.root, 1, 1)
      """
      : "INSERT OR REPLACE INTO content_chunks (hash, root, entries) VALUES (?, ?, ?)"
    do {
      try database.write { db in
        for list in lists {
          try db.cachedStatement(sql: sql).execute(
            arguments: [Data(list.hash), Data(list.root), Data(list.entries)])
        }
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// The chunk list of content `hash`, if one is kept: its encoded root and its entries.
  public func chunkList(hash: [UInt8]) throws(LocalStoreError) -> (
    root: [UInt8], entries: [UInt8]
  )? {
    try reading { db in
      try Row.fetchOne(
        db.cachedStatement(sql: "SELECT root, entries FROM content_chunks WHERE hash = ?"),
        arguments: [Data(hash)]
      ).map { row in ([UInt8](row["root"] as Data), [UInt8](row["entries"] as Data)) }
    }
  }

  /// The contents whose chunk lists are kept.
  public func chunkListHashes() throws(LocalStoreError) -> [[UInt8]] {
    try reading { db in
      try Data.fetchAll(db, sql: "SELECT hash FROM content_chunks").map { [UInt8]($0) }
    }
  }

  /// Forgets the chunk lists of content this device no longer holds.
  public func removeChunkLists(hashes: [[UInt8]]) throws(LocalStoreError) {
    guard !hashes.isEmpty else { return }
    do {
      try database.write { db in
        for hash in hashes {
          try db.cachedStatement(sql: "DELETE FROM content_chunks WHERE hash = ?").execute(
            arguments: [Data(hash)])
        }
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// Every kept chunk list, one at a time: what a repair searches for an object the hub lost.
  public func eachChunkList(_ body: ([UInt8], [UInt8]) -> Bool) throws(LocalStoreError) {
    try reading { db in
      let rows = try Row.fetchCursor(db, sql: "SELECT hash, entries FROM content_chunks")
      while let row = try rows.next() {
        if !body([UInt8](row["hash"] as Data), [UInt8](row["entries"] as Data)) { return }
      }
    }
  }
}
