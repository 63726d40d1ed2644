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
    // Checks the caller computed as it wrote the file are taken once a sample of them reads
    // back right; a sample that does not is a caller that computed them wrongly, and the hub
    // reads every chunk as before.
    let checks: [Data]
    do {
      if let supplied = try suppliedChecks(chunks, in: pack, framePrefix: framePrefix) {
        checks = supplied
      } else {
        checks = try chunks.map { chunk throws(HubError) in
          Data(try Self.check(chunk, in: pack, framePrefix: framePrefix))
        }
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
        // Prepared once: 16,000 rows a GiB, each parsed three times, showed in a push's profile.
        let touch = try db.cachedStatement(sql: "UPDATE objects SET touched = ? WHERE id = ?")
        let insert = try db.cachedStatement(
          sql: """
            INSERT INTO objects (id, data, "check", refs, touched, pack, "offset", length)
            VALUES (?, ?, ?, NULL, ?, ?, ?, ?)
            """)
        let unwant = try db.cachedStatement(sql: "DELETE FROM wanted_objects WHERE id = ?")
        for (chunk, check) in zip(chunks, checks) {
          let id = Data(chunk.id)
          try touch.execute(arguments: [now, id])
          if db.changesCount > 0 { continue }
          try insert.execute(
            arguments: [id, prefix, check, now, pack.name, chunk.offset, chunk.length])
          try unwant.execute(arguments: [id])
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

  /// How many of the checks a caller supplies the hub reads back and compares.
  static let suppliedChecksSampled = 4

  /// The callers' checks of `chunks`, once a spread sample of them matches the bytes in
  /// `pack`; nil when a chunk came without one or a sampled one does not match.
  private func suppliedChecks(
    _ chunks: [AdoptedChunk], in pack: PackHandle, framePrefix: [UInt8]
  ) throws(HubError) -> [Data]? {
    var supplied: [Data] = []
    supplied.reserveCapacity(chunks.count)
    for chunk in chunks {
      guard let hash = chunk.frameHash else { return nil }
      supplied.append(Data(ObjectCheck.xxHash64(hash)))
    }
    let samples = Swift.min(Self.suppliedChecksSampled, chunks.count)
    for index in 0..<samples {
      let chunk = chunks[index * (chunks.count - 1) / Swift.max(1, samples - 1)]
      guard
        try Self.check(chunk, in: pack, framePrefix: framePrefix)
          == chunk.frameHash.map(ObjectCheck.xxHash64)
      else {
        return nil
      }
    }
    return supplied
  }

  /// The check of `chunk` as `pack` holds it behind `framePrefix`.
  private static func check(_ chunk: AdoptedChunk, in pack: PackHandle, framePrefix: [UInt8])
    throws(HubError) -> [UInt8]
  {
    let bytes = try pack.read(at: chunk.offset, length: chunk.length)
    guard bytes.count == chunk.length else {
      throw HubError.failed(
        "the file taken in place as pack \(pack.name) is shorter than its chunks")
    }
    return bytes.withUnsafeBytes { ObjectCheck.of(framePrefix, $0) }
  }
}
