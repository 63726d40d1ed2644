import Foundation
import GRDB

extension LocalStore {
  // MARK: - Version records on disk

  /// Stores a record and keeps the derived tables of schema v5 up to date in the same
  /// transaction: `heads` (the versions no stored version names as a parent, what the engine
  /// loads at start) and `history_paths` (the paths with a file or symlink version that some
  /// version follows and retention has not released, what `.history` lists).
  static func add(_ version: StoredVersion, in db: Database) throws {
    try db.cachedStatement(
      sql:
        "INSERT OR IGNORE INTO versions (id, payload, path, document, hash) VALUES (?, ?, ?, ?, ?)"
    ).execute(arguments: [
      Data(version.id), Data(version.payload), Data(version.path), version.isDocument ? 1 : 0,
      version.contentHash.map { Data($0) },
    ])
    guard db.changesCount > 0 else { return }
    let id = Data(version.id)
    for parent in version.parents.map({ Data($0) }) {
      try db.cachedStatement(
        sql: "INSERT OR IGNORE INTO version_parents (parent, child) VALUES (?, ?)"
      ).execute(arguments: [parent, id])
      try db.cachedStatement(sql: "DELETE FROM heads WHERE id = ?").execute(arguments: [parent])
      guard db.changesCount > 0 else { continue }
      // A head that is now followed: an earlier version of its path.
      try db.cachedStatement(
        sql: """
          INSERT OR IGNORE INTO history_paths (path)
          SELECT path FROM versions WHERE id = ?1 AND document = 1
            AND NOT EXISTS (SELECT 1 FROM released WHERE id = ?1)
          """
      ).execute(arguments: [parent])
    }
    // Records may arrive after a version that names them.
    let followed =
      try Bool.fetchOne(
        db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM version_parents WHERE parent = ?)"),
        arguments: [id]) ?? false
    if !followed {
      try db.cachedStatement(sql: "INSERT INTO heads (id) VALUES (?)").execute(arguments: [id])
    } else if version.isDocument {
      try db.cachedStatement(sql: "INSERT OR IGNORE INTO history_paths (path) VALUES (?)")
        .execute(arguments: [Data(version.path)])
    }
  }

  /// Drops a stored record for good (`docsync forget`) and keeps the derived tables right: a
  /// parent that no remaining record follows is a head again, and a path with no earlier
  /// version left leaves `history_paths`. Rows that name it as the parent of a remaining record
  /// stay: that record still follows it, should it ever arrive again.
  static func remove(_ id: [UInt8], in db: Database) throws {
    let key = Data(id)
    let path = try Data.fetchOne(
      db, sql: "SELECT path FROM versions WHERE id = ?", arguments: [key])
    let parents = try Data.fetchAll(
      db, sql: "SELECT parent FROM version_parents WHERE child = ?", arguments: [key])
    for table in ["versions", "outbox", "released", "heads"] {
      try db.cachedStatement(sql: "DELETE FROM \(table) WHERE id = ?").execute(arguments: [key])
    }
    try db.cachedStatement(sql: "DELETE FROM version_parents WHERE child = ?").execute(
      arguments: [key])
    var paths = path.map { [$0] } ?? []
    for parent in parents {
      try db.cachedStatement(
        sql: """
          INSERT OR IGNORE INTO heads (id)
          SELECT ?1 WHERE EXISTS (SELECT 1 FROM versions WHERE id = ?1)
            AND NOT EXISTS (SELECT 1 FROM version_parents WHERE parent = ?1)
          """
      ).execute(arguments: [parent])
      if let parentPath = try Data.fetchOne(
        db, sql: "SELECT path FROM versions WHERE id = ?", arguments: [parent])
      {
        paths.append(parentPath)
      }
    }
    try dropEmptyHistoryPaths(paths, in: db)
  }

  /// The encoding of the stored record `id`.
  public func storedPayload(_ id: [UInt8]) throws(LocalStoreError) -> [UInt8]? {
    try reading { db in
      try Data.fetchOne(
        db.cachedStatement(sql: "SELECT payload FROM versions WHERE id = ?"), arguments: [Data(id)]
      ).map { [UInt8]($0) }
    }
  }

  /// The ids of the stored records that name `id` as a parent.
  public func followers(of id: [UInt8]) throws(LocalStoreError) -> [[UInt8]] {
    try reading { db in
      try Data.fetchAll(
        db.cachedStatement(sql: "SELECT child FROM version_parents WHERE parent = ?"),
        arguments: [Data(id)]
      ).map { [UInt8]($0) }
    }
  }

  /// Every stored record of `path`: id and encoding, in the order of their ids.
  public func storedVersions(at path: [UInt8]) throws(LocalStoreError) -> [(
    id: [UInt8], payload: [UInt8]
  )] {
    try reading { db in
      try Row.fetchAll(
        db.cachedStatement(sql: "SELECT id, payload FROM versions WHERE path = ? ORDER BY id"),
        arguments: [Data(path)]
      ).map { ([UInt8]($0[0] as Data), [UInt8]($0[1] as Data)) }
    }
  }

  /// The ids of the stored records whose content is the blob `hash`.
  public func versionIDs(withContent hash: [UInt8]) throws(LocalStoreError) -> [[UInt8]] {
    try reading { db in
      try Data.fetchAll(
        db.cachedStatement(sql: "SELECT id FROM versions WHERE hash = ?"), arguments: [Data(hash)]
      ).map { [UInt8]($0) }
    }
  }

  /// Whether retention released the content of `id`.
  public func isReleased(_ id: [UInt8]) throws(LocalStoreError) -> Bool {
    try reading { db in
      try Bool.fetchOne(
        db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM released WHERE id = ?)"),
        arguments: [Data(id)]) ?? false
    }
  }

  /// Whether `path` has an earlier version `.history` lists (see `add(_:in:)`).
  public func hasHistory(at path: [UInt8]) throws(LocalStoreError) -> Bool {
    try reading { db in
      try Bool.fetchOne(
        db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM history_paths WHERE path = ?)"),
        arguments: [Data(path)]) ?? false
    }
  }

  // MARK: - Indexing records stored before schema v5

  /// Whether every stored record has its index columns and the derived tables are built. An
  /// earlier docsync that opened this state after an update stores records without them (and
  /// keeps no derived table): they are indexed, and the tables derived again, at the next start.
  public func recordsIndexed() throws(LocalStoreError) -> Bool {
    try reading { db in
      try Bool.fetchOne(
        db,
        sql: """
          SELECT EXISTS (SELECT 1 FROM sync_meta WHERE key = 'records_indexed')
            AND NOT EXISTS (SELECT 1 FROM versions WHERE path IS NULL)
          """) ?? false
    }
  }

  /// Up to `limit` records stored before schema v5, not indexed yet.
  public func unindexedVersions(limit: Int) throws(LocalStoreError) -> [(
    id: [UInt8], payload: [UInt8]
  )] {
    try reading { db in
      try Row.fetchAll(
        db, sql: "SELECT id, payload FROM versions WHERE path IS NULL LIMIT ?", arguments: [limit]
      ).map { ([UInt8]($0[0] as Data), [UInt8]($0[1] as Data)) }
    }
  }

  /// Fills the index columns of records stored before schema v5 (a record that cannot be
  /// decoded gets an empty path, so that it is not asked for again).
  public func indexVersions(_ versions: [StoredVersion]) throws(LocalStoreError) {
    do {
      try database.write { db in
        for version in versions {
          try db.cachedStatement(
            sql: "UPDATE versions SET path = ?, document = ?, hash = ? WHERE id = ?"
          ).execute(arguments: [
            Data(version.path), version.isDocument ? 1 : 0, version.contentHash.map { Data($0) },
            Data(version.id),
          ])
          for parent in version.parents {
            try db.cachedStatement(
              sql: "INSERT OR IGNORE INTO version_parents (parent, child) VALUES (?, ?)"
            ).execute(arguments: [Data(parent), Data(version.id)])
          }
        }
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// Derives `heads` and `history_paths` from the indexed records, once they all are.
  public func finishIndexing() throws(LocalStoreError) {
    do {
      try database.write { db in
        try db.execute(
          sql: """
            DELETE FROM heads;
            INSERT INTO heads (id)
              SELECT id FROM versions v
              WHERE NOT EXISTS (SELECT 1 FROM version_parents p WHERE p.parent = v.id);
            DELETE FROM history_paths;
            INSERT OR IGNORE INTO history_paths (path)
              SELECT path FROM versions v
              WHERE document = 1
                AND NOT EXISTS (SELECT 1 FROM heads h WHERE h.id = v.id)
                AND NOT EXISTS (SELECT 1 FROM released r WHERE r.id = v.id);
            INSERT OR REPLACE INTO sync_meta (key, value) VALUES ('records_indexed', X'01');
            """)
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// Removes from `history_paths` those of `paths` that have no earlier version left.
  static func dropEmptyHistoryPaths(_ paths: [Data], in db: Database) throws {
    for path in paths {
      try db.cachedStatement(
        sql: """
          DELETE FROM history_paths WHERE path = ?1 AND NOT EXISTS (
            SELECT 1 FROM versions v WHERE v.path = ?1 AND v.document = 1
              AND NOT EXISTS (SELECT 1 FROM heads h WHERE h.id = v.id)
              AND NOT EXISTS (SELECT 1 FROM released r WHERE r.id = v.id))
          """
      ).execute(arguments: [path])
    }
  }

  /// Runs a read of one statement (see ``StateDatabase/readStatement(_:)``); the statements
  /// are cached, as a pull runs them for every record it brings.
  func reading<T>(_ body: (Database) throws -> T) throws(LocalStoreError) -> T {
    do {
      return try database.readStatement(body)
    } catch {
      throw LocalStoreError(error)
    }
  }
}
