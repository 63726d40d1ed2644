import Foundation
import GRDB

// Content objects' bytes in pack files (see PackFolder). A prune or forget deletes rows; the
// bytes they named stay in their packs until `compactPacks` rewrites a pack less than half
// live (its live objects copied into a new pack, made durable, the rows moved in one
// transaction, then the old file removed) or removes one nothing names. Only sealed packs are
// touched, so an upload in another process never loses bytes it is about to commit.

extension SQLiteHub {
  /// The schema step that moves objects' bytes into packs. Released steps are never edited.
  static func registerPacksMigration(_ migrator: inout DatabaseMigrator) {
    migrator.registerMigration("v6 object packs") { db in
      try db.execute(
        sql: """
          -- pack: the file in the pack folder that holds the object's bytes, at offset, length
          -- bytes long; data is then empty. Objects stored before keep their bytes in data and
          -- a NULL pack.
          ALTER TABLE objects ADD COLUMN pack TEXT;
          ALTER TABLE objects ADD COLUMN "offset" INTEGER;
          ALTER TABLE objects ADD COLUMN length INTEGER;
          CREATE INDEX objects_by_pack ON objects (pack) WHERE pack IS NOT NULL;
          -- A docsync without packs would read a packed object as empty, find it damaged and
          -- drop it: it must refuse this hub file (SQLiteHub.format).
          INSERT OR REPLACE INTO settings (key, value) VALUES ('devices_from', '2');
          -- A docsync from before devices_from does not read that setting: a mount still
          -- running an older build (the package upgraded under it) would drop packed objects
          -- as damaged and prune them unread. Deleting a packed row calls a function only this
          -- docsync and later ones define on their connections (SQLiteHub.formatFunction); an
          -- older one cannot even prepare a delete from objects, so it fails, with its
          -- transaction, and nothing is lost.
          CREATE TRIGGER packed_objects_need_format_2 BEFORE DELETE ON objects
          WHEN OLD.pack IS NOT NULL
          BEGIN
            SELECT docsync_hub_format();
          END;
          """)
    }
  }

  /// The most small packs one prune copies together.
  static let smallPacksMerged = 256

  /// Rewrites the sealed packs whose live objects take less than half of them, copies the
  /// small ones together, and removes those no row names (a put cut short before its commit
  /// leaves such bytes); seals this instance's pack first. Returns how many packs went.
  @discardableResult
  func compactPacks() async throws(HubError) -> Int {
    // This instance's own pack too (a mount's last pack would otherwise keep what it pruned
    // until the mount ends): sealed inside a write transaction, as appends happen only in
    // one, so that no append of it waits for its commit; the next put starts a new pack.
    try await write { [packs] _ in packs.seal() }
    var target: (pack: PackHandle, size: Int64)?
    var removed = 0
    let names = packs.names()
    // Every mount that uploads anything leaves a pack of its own: over months, thousands of
    // small files. Those under an eighth of a full pack are copied together whenever there
    // are two or more (at most `smallPacksMerged` a prune), however live.
    let small = Set(
      names.filter { name in (packs.size(of: name) ?? packs.packSize) < packs.packSize / 8 }
        .prefix(Self.smallPacksMerged))
    for name in names {
      // Held until the file is gone: an instance appending to it, or another prune, keeps it.
      guard let held = packs.lockSealed(name), let size = held.size else { continue }
      let live = try await read { db in
        try Row.fetchAll(
          db,
          sql: #"SELECT rowid, "offset", length FROM objects WHERE pack = ? ORDER BY "offset""#,
          arguments: [name]
        ).map { row in
          (
            rowid: row["rowid"] as Int64, offset: row["offset"] as Int64,
            length: row["length"] as Int64
          )
        }
      }
      if live.isEmpty {
        packs.remove(name)
        removed += 1
        continue
      }
      let merged = small.count >= 2 && small.contains(name)
      if live.reduce(0, { $0 + $1.length }) * 2 >= size && !merged { continue }
      if target == nil || target!.size >= packs.packSize {
        target = (try packs.create(), 0)
      }
      var moves: [(rowid: Int64, from: Int64, to: Int64)] = []
      for object in live {
        let bytes = try held.read(at: object.offset, length: Int(object.length))
        try target!.pack.write(bytes, at: target!.size)
        moves.append((object.rowid, object.offset, target!.size))
        // A short read (a damaged pack) leaves a hole: the object's check finds it.
        target!.size += object.length
      }
      try target!.pack.sync()
      let into = target!.pack.name
      try await write { [moves] db in
        for move in moves {
          try db.execute(
            sql: """
              UPDATE objects SET pack = ?, "offset" = ?
              WHERE rowid = ? AND pack = ? AND "offset" = ?
              """, arguments: [into, move.to, move.rowid, name, move.from])
        }
      }
      packs.remove(name)
      removed += 1
    }
    return removed
  }
}
