import Crypto
import Foundation
import GRDB

extension SQLiteHub {
  public func putBlob(hash: [UInt8], from fileDescriptor: Int32) async throws(HubError) {
    try await putBlob(hash: hash, from: fileDescriptor, checked: false)
  }

  public func putBlob(hash: [UInt8], from fileDescriptor: Int32, checked: Bool)
    async throws(HubError)
  {
    if try await hasBlob(hash: hash) { return }
    let started = Date().timeIntervalSince1970
    let upload = try await write { db in
      try db.execute(
        sql: "INSERT INTO uploads (hash, started) VALUES (?, ?)",
        arguments: [Data(hash), started])
      return db.lastInsertedRowID
    }
    do throws(HubError) {
      var hasher = SHA256()
      var offset: Int64 = 0
      var index = 0
      while true {
        let chunk = try BlobFile.readChunk(fileDescriptor, at: offset, count: Self.chunkSize)
        if chunk.isEmpty { break }
        if !checked { hasher.update(data: chunk) }
        let data = Data(chunk)
        let chunkIndex = index
        try await write { db in
          try db.execute(
            sql: #"INSERT INTO chunks (upload, "index", data) VALUES (?, ?, ?)"#,
            arguments: [upload, chunkIndex, data])
        }
        offset += Int64(chunk.count)
        index += 1
      }
      let digest = Array(hasher.finalize())
      guard checked || digest == hash else {
        throw HubError.integrity(
          "the file's SHA-256 is \(hexString(digest)), not the \(hexString(hash)) it was put under")
      }
      let size = offset
      try await write { db in
        try db.execute(
          sql: "INSERT OR IGNORE INTO blobs (hash, size, upload) VALUES (?, ?, ?)",
          arguments: [Data(hash), size, upload])
        if db.changesCount == 0 {
          // Another process completed the same blob first; its copy is as good as ours.
          try Self.discard(upload: upload, db)
        }
        // Its bytes were checked against the key above: whatever wanted it has it.
        try db.execute(sql: "DELETE FROM wanted WHERE hash = ?", arguments: [Data(hash)])
      }
    } catch {
      try? await write { db in try Self.discard(upload: upload, db) }
      throw error
    }
  }

  public func hasBlob(hash: [UInt8]) async throws(HubError) -> Bool {
    try await read { db in
      try Bool.fetchOne(
        db, sql: "SELECT EXISTS (SELECT 1 FROM blobs WHERE hash = ?)", arguments: [Data(hash)])
        ?? false
    }
  }

  public func fetchBlob(hash: [UInt8], to fileDescriptor: Int32) async throws(HubError) {
    let stored = try await read { db -> (size: Int64, upload: Int64)? in
      guard
        let row = try Row.fetchOne(
          db, sql: "SELECT size, upload FROM blobs WHERE hash = ?", arguments: [Data(hash)])
      else { return nil }
      return (row["size"], row["upload"])
    }
    guard let stored else { throw .missingBlob(hash) }
    var hasher = SHA256()
    var offset: Int64 = 0
    try await forEachChunk(of: stored.upload) { (chunk) throws(HubError) in
      hasher.update(data: chunk)
      try BlobFile.write(fileDescriptor, chunk, at: offset)
      offset += Int64(chunk.count)
    }
    if ftruncate(fileDescriptor, off_t(offset)) != 0 {
      throw .failed("cannot truncate the file for blob \(hexString(hash)): \(BlobFile.errorText())")
    }
    guard offset == stored.size else {
      throw .integrity(
        "blob \(hexString(hash)) arrived with \(offset) bytes instead of \(stored.size)")
    }
    let digest = Array(hasher.finalize())
    guard digest == hash else {
      throw .integrity("blob \(hexString(hash)) arrived with SHA-256 \(hexString(digest))")
    }
  }

  static func discard(upload: Int64, _ db: Database) throws {
    try db.execute(sql: "DELETE FROM chunks WHERE upload = ?", arguments: [upload])
    try db.execute(sql: "DELETE FROM uploads WHERE id = ?", arguments: [upload])
  }

  /// Hands the chunks of the upload `upload` to `body` in order. A stored blob is immutable, so
  /// reading it chunk by chunk in separate transactions is safe and keeps one chunk in memory
  /// at a time.
  func forEachChunk(of upload: Int64, _ body: (Data) throws(HubError) -> Void)
    async throws(HubError)
  {
    var index = 0
    while true {
      let chunkIndex = index
      let chunk = try await read { db in
        try Data.fetchOne(
          db, sql: #"SELECT data FROM chunks WHERE upload = ? AND "index" = ?"#,
          arguments: [upload, chunkIndex])
      }
      guard let chunk else { return }
      try body(chunk)
      index += 1
    }
  }
}
