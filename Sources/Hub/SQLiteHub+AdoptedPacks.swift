import Foundation
import GRDB
import Glibc

// Chunks taken in place: a device's blob of content that does not compress becomes one of the
// hub's packs as it is, by a hard link, and each chunk's row names its plain bytes there with
// the frame's first byte in the row. On the embedded hub a chunked push of a large file then
// writes its bytes once, as a blob's hand-over does, instead of copying them into a pack.

extension SQLiteHub {
  /// The schema step that lets a row keep the first bytes of its frame. Released steps are
  /// never edited.
  static func registerAdoptedPacksMigration(_ migrator: inout DatabaseMigrator) {
    migrator.registerMigration("v7 chunks taken in place") { db in
      try db.execute(
        sql: """
          -- A packed object's frame is its row's data followed by its pack's bytes: data is
          -- empty for an object appended to a pack, and the raw frame's byte for a chunk taken
          -- in place in a device's file. A docsync of format 2 would read such a chunk without
          -- that byte, find it damaged and drop it: it must refuse this hub file.
          INSERT OR REPLACE INTO settings (key, value) VALUES ('devices_from', '3');
          """)
    }
  }

  public func adoptChunks(
    file path: String, descriptor: Int32, chunks: [AdoptedChunk], framePrefix: [UInt8]
  ) async throws(HubError) -> Bool {
    guard !chunks.isEmpty else { return true }
    try HubObject.check(ids: chunks.map(\.id))
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return false }
    let size = Int64(info.st_size)
    for chunk in chunks {
      guard chunk.offset >= 0, chunk.length >= 0, chunk.length <= HubObject.maximumSize,
        chunk.offset + Int64(chunk.length) <= size
      else {
        throw .integrity("a chunk taken in place lies outside its file of \(size) bytes")
      }
    }
    guard let pack = try packs.adopt(descriptor) else { return false }
    // The hub's own checks, of the bytes as its pack holds them, outside the transaction.
    let checks: [Data]
    do {
      checks = try chunks.map { chunk throws(HubError) in
        let bytes = try pack.read(at: chunk.offset, length: chunk.length)
        guard bytes.count == chunk.length else {
          throw HubError.failed(
            "the file taken in place as pack \(pack.name) is shorter than its chunks")
        }
        return Data(bytes.withUnsafeBytes { ObjectCheck.of(framePrefix, $0) })
      }
    } catch {
      packs.remove(pack.name)
      throw error
    }
    let now = Int64(Date().timeIntervalSince1970)
    let prefix = Data(framePrefix)
    let named: Bool
    do {
      named = try await write { [pack] db -> Bool in
        var named = false
        for (chunk, check) in zip(chunks, checks) {
          let id = Data(chunk.id)
          try db.execute(sql: "UPDATE objects SET touched = ? WHERE id = ?", arguments: [now, id])
          if db.changesCount > 0 { continue }
          try db.execute(
            sql: """
              INSERT INTO objects (id, data, "check", refs, touched, pack, "offset", length)
              VALUES (?, ?, ?, NULL, ?, ?, ?, ?)
              """,
            arguments: [id, prefix, check, now, pack.name, chunk.offset, chunk.length])
          try db.execute(sql: "DELETE FROM wanted_objects WHERE id = ?", arguments: [id])
          named = true
        }
        return named
      }
    } catch {
      packs.remove(pack.name)
      throw error
    }
    // The hub had every chunk already: the file is not needed as a pack.
    if !named { packs.remove(pack.name) }
    return true
  }
}
