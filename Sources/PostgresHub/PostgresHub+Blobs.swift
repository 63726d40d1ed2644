import Crypto
import Foundation
import Hub
import PostgresNIO

// A blob travels in chunks of ``PostgresHub/chunkSize`` bytes, one statement each, so a file of
// several GiB goes up and down holding one chunk in memory, and no transaction stays open for
// the length of a transfer. Each chunk is stored with its own SHA-256, checked as it arrives on
// fetch, so damage is reported at the chunk it is in; the blob's hash is checked as well.

extension PostgresHub {
  public func putBlob(hash: [UInt8], from fileDescriptor: Int32) async throws(HubError) {
    if try await hasBlob(hash: hash) { return }
    let upload = UUID()
    try await withTransaction { connection -> Void in
      // Uploads abandoned a day ago or more by a device that lost its connection (the
      // discard below needs the connection that just failed), every few minutes.
      if self.uploadSweepIsDue() {
        try await connection.run("SELECT docsync.sweep_uploads()")
      }
      try await connection.run(
        "INSERT INTO docsync.uploads (id, hash) VALUES (\(upload), \(ByteBuffer(bytes: hash)))")
    }
    do throws(HubError) {
      var hasher = SHA256()
      var offset: Int64 = 0
      var index = 0
      while true {
        let chunk = try BlobFile.readChunk(
          fileDescriptor, at: offset, count: Self.chunkSize, of: .caller)
        if chunk.isEmpty { break }
        hasher.update(data: chunk)
        let chunkHash = Array(SHA256.hash(data: chunk))
        let chunkIndex = index
        // Committed before the next: a chunk whose insert was lost while the pool went on
        // with a new connection would leave a named blob with a hole in it.
        try await withTransaction { connection -> Void in
          try await connection.run(
            """
            INSERT INTO docsync.chunks (upload, index, hash, data) VALUES (
              \(upload), \(chunkIndex), \(ByteBuffer(bytes: chunkHash)), \(ByteBuffer(bytes: chunk)))
            """)
        }
        offset += Int64(chunk.count)
        index += 1
      }
      let digest = Array(hasher.finalize())
      guard digest == hash else {
        throw HubError.integrity(
          "the file's SHA-256 is \(hexString(digest)), not the \(hexString(hash)) it was put under")
      }
      let size = offset
      let stored = try await withTransaction { connection -> Bool in
        let rows = try await connection.rows(
          """
          INSERT INTO docsync.blobs (hash, size, upload)
          VALUES (\(ByteBuffer(bytes: hash)), \(size), \(upload))
          ON CONFLICT DO NOTHING RETURNING true
          """)
        return !rows.isEmpty
      }
      // Another device completed the same blob first; its copy is as good as ours.
      if !stored { try await discard(upload: upload) }
    } catch {
      try? await discard(upload: upload)
      throw error
    }
  }

  public func hasBlob(hash: [UInt8]) async throws(HubError) -> Bool {
    try await withConnection { connection -> Bool in
      let rows = try await connection.rows(
        """
        SELECT EXISTS (SELECT 1 FROM docsync.blobs
          WHERE account = docsync.current_account() AND hash = \(ByteBuffer(bytes: hash)))
        """)
      for exists in try rows.decode(Bool.self) { return exists }
      return false
    }
  }

  public func fetchBlob(hash: [UInt8], to fileDescriptor: Int32) async throws(HubError) {
    let stored = try await withConnection { connection -> (size: Int64, upload: UUID)? in
      let rows = try await connection.rows(
        """
        SELECT size, upload FROM docsync.blobs
        WHERE account = docsync.current_account() AND hash = \(ByteBuffer(bytes: hash))
        """)
      for (size, upload) in try rows.decode((Int64, UUID).self) { return (size, upload) }
      return nil
    }
    guard let stored else { throw .missingBlob(hash) }
    var hasher = SHA256()
    var offset: Int64 = 0
    var index = 0
    // A stored blob is immutable, so reading it chunk by chunk in separate statements is safe.
    while true {
      let chunkIndex = index
      let row = try await withConnection { connection -> (ByteBuffer, ByteBuffer)? in
        let rows = try await connection.rows(
          """
          SELECT hash, data FROM docsync.chunks
          WHERE upload = \(stored.upload) AND index = \(chunkIndex)
          """)
        for row in try rows.decode((ByteBuffer, ByteBuffer).self) { return row }
        return nil
      }
      guard let (chunkHash, data) = row else { break }
      let bytes = Array(data.readableBytesView)
      guard Array(SHA256.hash(data: bytes)) == Array(chunkHash.readableBytesView) else {
        throw .integrity("chunk \(index) of blob \(hexString(hash)) arrived damaged")
      }
      hasher.update(data: bytes)
      try BlobFile.write(fileDescriptor, bytes, at: offset, of: .caller)
      offset += Int64(bytes.count)
      index += 1
    }
    if ftruncate(fileDescriptor, off_t(offset)) != 0 {
      throw .local("cannot truncate the file for blob \(hexString(hash)): \(BlobFile.errorText())")
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

  private func discard(upload: UUID) async throws(HubError) {
    try await withTransaction { connection -> Void in
      try await connection.run(
        "SELECT docsync.discard_upload(\(upload))")
    }
  }

  /// Whether a put should sweep the account's abandoned uploads now: at the first put of this
  /// hub, then once every ``uploadSweepInterval``; true takes the turn.
  func uploadSweepIsDue() -> Bool {
    let now = ContinuousClock.now
    return lastUploadSweep.withLock { last in
      if let last, last.duration(to: now) < Self.uploadSweepInterval { return false }
      last = now
      return true
    }
  }
}
