import Foundation
import GRDB

// Content objects in the hub file. Each is small (a chunk of at most 256 KiB, framed), so its
// bytes are one row, unlike a blob, which is written in chunks across transactions: a batch of
// objects is one short transaction, and a device's upload is many such batches.

extension SQLiteHub: ObjectStore {
  /// The schema step that stores content objects. Released steps are never edited.
  static func registerObjectsMigration(_ migrator: inout DatabaseMigrator) {
    migrator.registerMigration("v5 content objects") { db in
      try db.execute(
        sql: """
          -- Content objects by the device's id, which the hub cannot check (it may be keyed);
          -- "check" is the hub's own 64-bit BLAKE2b of the stored bytes, to find its own damage.
          -- refs: the ids a node names, 32 bytes each, end to end; NULL for a chunk. touched:
          -- unix seconds of the last put or presence check (the grace of ObjectStore). About
          -- 110 bytes of metadata an object with its index, and 32 more in its parent's refs
          -- (Tools/BenchObjects measures it).
          CREATE TABLE objects (
            id BLOB NOT NULL UNIQUE,
            data BLOB NOT NULL,
            "check" BLOB NOT NULL,
            refs BLOB,
            touched INTEGER NOT NULL
          );
          -- Objects dropped as damaged, for a device that has them to put again.
          CREATE TABLE wanted_objects (
            id BLOB PRIMARY KEY,
            since REAL NOT NULL
          ) WITHOUT ROWID;
          """)
    }
  }

  public func missingObjects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]] {
    guard !ids.isEmpty else { return [] }
    try HubObject.check(ids: ids)
    let now = Int64(Date().timeIntervalSince1970)
    return try await write { db in
      var missing: [[UInt8]] = []
      for id in ids {
        try db.execute(
          sql: "UPDATE objects SET touched = ? WHERE id = ?", arguments: [now, Data(id)])
        if db.changesCount == 0 { missing.append(id) }
      }
      return missing
    }
  }

  public func putObjects(_ objects: [HubObject]) async throws(HubError) {
    guard !objects.isEmpty else { return }
    try HubObject.check(objects)
    let now = Int64(Date().timeIntervalSince1970)
    let rows = objects.map { object in
      (
        id: Data(object.id), data: Data(object.data), check: Data(ObjectCheck.of(object.data)),
        refs: object.references.isEmpty ? nil : Data(object.references.joined())
      )
    }
    try await write { db in
      for row in rows {
        try db.execute(
          sql: "UPDATE objects SET touched = ? WHERE id = ?", arguments: [now, row.id])
        if db.changesCount > 0 { continue }
        if let refs = row.refs {
          for offset in stride(from: 0, to: refs.count, by: 32) {
            let child = refs[(refs.startIndex + offset)..<(refs.startIndex + offset + 32)]
            let present =
              try Bool.fetchOne(
                db, sql: "SELECT EXISTS (SELECT 1 FROM objects WHERE id = ?)",
                arguments: [Data(child)]) ?? false
            guard present else { throw HubError.missingBlob(Array(child)) }
          }
        }
        try db.execute(
          sql: """
            INSERT INTO objects (id, data, "check", refs, touched) VALUES (?, ?, ?, ?, ?)
            """, arguments: [row.id, row.data, row.check, row.refs, now])
        try db.execute(sql: "DELETE FROM wanted_objects WHERE id = ?", arguments: [row.id])
      }
    }
  }

  public func objects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]: [UInt8]] {
    guard !ids.isEmpty else { return [:] }
    try HubObject.check(ids: ids)
    let stored = try await read { db in
      var found: [(id: [UInt8], data: [UInt8], check: [UInt8])] = []
      for id in ids {
        if let row = try Row.fetchOne(
          db, sql: #"SELECT data, "check" FROM objects WHERE id = ?"#, arguments: [Data(id)])
        {
          found.append((id, Array(row["data"] as Data), Array(row["check"] as Data)))
        }
      }
      return found
    }
    var result: [[UInt8]: [UInt8]] = [:]
    var damaged: [(id: [UInt8], check: [UInt8])] = []
    for object in stored {
      if ObjectCheck.matches(object.data, object.check) {
        result[object.id] = object.data
      } else {
        damaged.append((object.id, object.check))
      }
    }
    if !damaged.isEmpty {
      try await write { [damaged] db in
        for object in damaged {
          // Another process may have put a good copy since the read: drop only the one judged.
          guard
            let row = try Row.fetchOne(
              db, sql: #"SELECT data, "check" FROM objects WHERE id = ?"#,
              arguments: [Data(object.id)]),
            !ObjectCheck.matches(Array(row["data"] as Data), Array(row["check"] as Data))
          else { continue }
          try db.execute(sql: "DELETE FROM objects WHERE id = ?", arguments: [Data(object.id)])
          try db.execute(
            sql: "INSERT OR IGNORE INTO wanted_objects (id, since) VALUES (?, ?)",
            arguments: [Data(object.id), Date().timeIntervalSince1970])
        }
      }
    }
    return result
  }

  public func wantedObjects() async throws(HubError) -> [[UInt8]] {
    try await read { db in
      try Data.fetchAll(db, sql: "SELECT id FROM wanted_objects ORDER BY id").map { Array($0) }
    }
  }

  /// Deletes the objects that no record reaches and that are old (not put or found present
  /// since `cutoff`) or were reached only through `released` (roots whose records prune or
  /// forget just let go, whose space comes back now). An object that a recent node names
  /// stays: an upload whose nodes are in but whose record is not yet must find its chunks.
  /// Returns how many went.
  static func sweepObjects(_ db: Database, touchedBefore cutoff: Int64, released: Set<Data> = [])
    throws -> Int
  {
    var references: [Data: Data] = [:]
    var recentNodes: [Data] = []
    let nodes = try Row.fetchCursor(
      db, sql: "SELECT id, refs, touched FROM objects WHERE refs IS NOT NULL")
    while let row = try nodes.next() {
      references[row["id"]] = row["refs"]
      if (row["touched"] as Int64) >= cutoff { recentNodes.append(row["id"]) }
    }
    func children(_ id: Data) -> [Data] {
      guard let refs = references[id] else { return [] }
      return stride(from: 0, to: refs.count, by: 32).map {
        Data(refs[(refs.startIndex + $0)..<(refs.startIndex + $0 + 32)])
      }
    }
    var freed: Set<Data> = []
    var pending = Array(released)
    while let id = pending.popLast() {
      if freed.insert(id).inserted { pending += children(id) }
    }
    var reached: Set<Data> = []
    pending = try Data.fetchAll(db, sql: "SELECT DISTINCT hash FROM record_blobs")
    pending += recentNodes.filter { !freed.contains($0) }
    while let id = pending.popLast() {
      if reached.insert(id).inserted { pending += children(id) }
    }
    var doomed: [Int64] = []
    let old = try Row.fetchCursor(
      db, sql: "SELECT rowid, id, touched FROM objects")
    while let row = try old.next() {
      let id = row["id"] as Data
      if !reached.contains(id) && ((row["touched"] as Int64) < cutoff || freed.contains(id)) {
        doomed.append(row["rowid"])
      }
    }
    for start in stride(from: 0, to: doomed.count, by: 500) {
      let batch = doomed[start..<min(start + 500, doomed.count)]
      try db.execute(
        sql:
          "DELETE FROM objects WHERE rowid IN (\(batch.map { _ in "?" }.joined(separator: ",")))",
        arguments: StatementArguments(Array(batch)))
    }
    return doomed.count
  }
}
