import Foundation
import GRDB

// Content objects of the hub. Each is small (a chunk of at most 256 KiB, framed): its row in
// the hub file names its bytes in a pack file (SQLiteHub+Packs), or, put before packs, holds
// them. A batch of objects is one append to a pack and one short transaction, and a device's
// upload is many such batches.

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
      // Statements prepared once a call, as in every per-object loop here: 10,000 small files
      // compiled each statement 10,000 times, a sixth of a new device's initial sync.
      let touch = try db.cachedStatement(sql: "UPDATE objects SET touched = ? WHERE id = ?")
      for id in ids {
        try touch.execute(arguments: [now, Data(id)])
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
        id: Data(object.id), data: object.data, check: Data(ObjectCheck.of(object.data)),
        refs: object.references.isEmpty ? nil : Data(object.references.joined())
      )
    }
    try await write { [packs] db in
      // First what is new, children checked (a child earlier in the batch counts), so that a
      // refused batch writes no bytes; then the new bytes, durable in a pack before the rows
      // that name them commit.
      var fresh: [Int] = []
      var batch: Set<Data> = []
      let touch = try db.cachedStatement(sql: "UPDATE objects SET touched = ? WHERE id = ?")
      let exists = try db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM objects WHERE id = ?)")
      for (index, row) in rows.enumerated() {
        if batch.contains(row.id) { continue }
        try touch.execute(arguments: [now, row.id])
        if db.changesCount > 0 { continue }
        if let refs = row.refs {
          for offset in stride(from: 0, to: refs.count, by: 32) {
            let child = Data(refs[(refs.startIndex + offset)..<(refs.startIndex + offset + 32)])
            if batch.contains(child) { continue }
            let present = try Bool.fetchOne(exists, arguments: [child]) ?? false
            guard present else { throw HubError.missingBlob(Array(child)) }
          }
        }
        batch.insert(row.id)
        fresh.append(index)
      }
      guard !fresh.isEmpty else { return }
      let (pack, offsets) = try packs.append(fresh.map { rows[$0].data })
      let insert = try db.cachedStatement(
        sql: """
          INSERT INTO objects (id, data, "check", refs, touched, pack, "offset", length)
          VALUES (?, X'', ?, ?, ?, ?, ?, ?)
          """)
      let unwant = try db.cachedStatement(sql: "DELETE FROM wanted_objects WHERE id = ?")
      for (index, offset) in zip(fresh, offsets) {
        let row = rows[index]
        try insert.execute(
          arguments: [row.id, row.check, row.refs, now, pack, offset, row.data.count])
        try unwant.execute(arguments: [row.id])
      }
    }
  }

  public func objects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]: [UInt8]] {
    guard !ids.isEmpty else { return [:] }
    try HubObject.check(ids: ids)
    typealias Stored = (id: [UInt8], data: [UInt8]?, check: [UInt8])
    func load(_ ids: [[UInt8]]) async throws(HubError) -> [Stored] {
      try await read { [packs] db in
        try ids.compactMap { id in
          try Self.storedObject(id, db, packs).map { (id, $0.data, $0.check) }
        }
      }
    }
    var stored = try await load(ids)
    // A pack gone under the read: a prune rewrote it and moved its rows; read them once more.
    let moved = stored.filter { $0.data == nil }.map(\.id)
    if !moved.isEmpty {
      let again = try await load(moved)
      stored = stored.filter { $0.data != nil } + again
    }
    var result: [[UInt8]: [UInt8]] = [:]
    var damaged: [[UInt8]] = []
    for object in stored {
      if let data = object.data, ObjectCheck.matches(data, object.check) {
        result[object.id] = data
      } else {
        damaged.append(object.id)
      }
    }
    if !damaged.isEmpty {
      try await write { [damaged, packs] db in
        for id in damaged {
          // Another process may have put a good copy since the read: drop only the one judged.
          guard let now = try Self.storedObject(id, db, packs),
            now.data.map({ !ObjectCheck.matches($0, now.check) }) ?? true
          else { continue }
          try db.execute(sql: "DELETE FROM objects WHERE id = ?", arguments: [Data(id)])
          try db.execute(
            sql: "INSERT OR IGNORE INTO wanted_objects (id, since) VALUES (?, ?)",
            arguments: [Data(id), Date().timeIntervalSince1970])
        }
      }
    }
    return result
  }

  /// The stored bytes of object `id` and their check, nil when there is no such row: from the
  /// row itself (objects stored before packs) or from its pack, and then nil bytes when the
  /// pack is gone.
  static func storedObject(_ id: [UInt8], _ db: Database, _ packs: PackFolder) throws
    -> (data: [UInt8]?, check: [UInt8])?
  {
    guard
      let row = try Row.fetchOne(
        db.cachedStatement(
          sql: #"SELECT data, "check", pack, "offset", length FROM objects WHERE id = ?"#),
        arguments: [Data(id)])
    else { return nil }
    let check = Array(row["check"] as Data)
    let data = Array(row["data"] as Data)
    guard let pack = row["pack"] as String? else { return (data, check) }
    // A packed row's data is the start of the frame (empty, or a chunk taken in place's
    // frame byte), the pack the rest.
    return (try packs.read(pack, at: row["offset"], length: row["length"], after: data), check)
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
    // Every twin's blob is named by a record (prune and forget drop it with the last one).
    pending += try Data.fetchAll(db, sql: "SELECT root FROM blob_twins")
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
