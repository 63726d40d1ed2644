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
    var info = stat()
    if fstat(fileDescriptor, &info) == 0 && Int64(info.st_size) > Self.fileThreshold {
      try await putBlobFile(hash: hash, from: fileDescriptor, checked: checked)
    } else {
      try await putChunks(hash: hash, from: fileDescriptor, checked: checked)
    }
  }

  /// Writes the blob as a file in the blob folder, then records it in one short transaction.
  ///
  /// The transaction checks, holding the hub's write lock, that the file is still there: a
  /// prune or a sweep in another process removes a file only under that lock and only when no
  /// row names it, so it may remove this one between the rename and the row. The put then
  /// writes it again, once.
  func putBlobFile(hash: [UInt8], from fileDescriptor: Int32, checked: Bool)
    async throws(HubError)
  {
    let folder = blobFolder
    for _ in 0..<2 {
      let temporary = try folder.write(hash, from: fileDescriptor, checked: checked)
      if try await hasBlob(hash: hash) {
        // Another process finished the same blob meanwhile; its file stays as it is.
        folder.discard(temporary.name)
        return
      }
      try folder.install(temporary, as: hash)
      let started = Date().timeIntervalSince1970
      let recorded = try await write { db -> Bool in
        guard folder.size(of: hash) == temporary.size else { return false }
        try db.execute(
          sql: "INSERT INTO uploads (hash, started) VALUES (?, ?)",
          arguments: [Data(hash), started])
        let upload = db.lastInsertedRowID
        try db.execute(
          sql: "INSERT OR IGNORE INTO blobs (hash, size, upload, file) VALUES (?, ?, ?, 1)",
          arguments: [Data(hash), temporary.size, upload])
        if db.changesCount == 0 {
          // Another process completed the same blob first; its copy is as good as ours.
          try Self.discard(upload: upload, db)
          if try Self.storedBlobLocked(hash, db)?.file == false { folder.remove(hash) }
        }
        // Its bytes were checked against the key above: whatever wanted it has it.
        try db.execute(sql: "DELETE FROM wanted WHERE hash = ?", arguments: [Data(hash)])
        return true
      }
      if recorded { return }
    }
    throw .unreachable("blob \(hexString(hash)) was removed while it was put; try again")
  }

  /// Takes over a large blob's file by renaming it into the blob folder, where a put would copy
  /// it: a 1 GiB push wrote each byte three times (the working file, the device's copy, the
  /// hub's) and now writes it twice. The rename, the folder's fsync and the row happen in one
  /// transaction, holding the hub's write lock, so that no prune or sweep in another process
  /// removes the file between its name and its row; a crash between the two leaves a file no
  /// row names, which ``recoverBlob(hash:)`` records.
  public func adoptBlob(hash: [UInt8], file path: String, descriptor: Int32, checked: Bool)
    async throws(HubError) -> Bool
  {
    if try await hasBlob(hash: hash) { return true }
    var info = stat()
    guard fstat(descriptor, &info) == 0, Int64(info.st_size) > Self.fileThreshold,
      blobFolder.shares(fileSystemWith: info)
    else { return false }
    let size = Int64(info.st_size)
    if !checked {
      let digest = try BlobFile.digest(of: descriptor, .caller)
      guard digest.size == size, digest.digest == hash else {
        throw .integrity(
          "the file's SHA-256 is \(hexString(digest.digest)), not the \(hexString(hash)) it was put under"
        )
      }
    }
    let folder = blobFolder
    let inode = info.st_ino
    let started = Date().timeIntervalSince1970
    return try await write { db -> Bool in
      if try Self.storedBlobLocked(hash, db) != nil { return true }
      guard folder.adopt(path, as: hash) else { return false }
      var found = size
      if folder.inode(of: hash) != inode {
        // Something put another file at `path` after the caller opened it: not the file the
        // caller vouched for, so its bytes are checked here.
        let digest: [UInt8]
        (found, digest) = try folder.read(hash, to: nil)
        guard digest == hash else {
          folder.remove(hash)
          throw HubError.integrity(
            "the file taken over as blob \(hexString(hash)) has SHA-256 \(hexString(digest))")
        }
      }
      do {
        try folder.syncNames()
        try Self.recordBlobFile(hash, size: found, started: started, db)
        return true
      } catch {
        // The caller keeps its file when the hub does not record it.
        folder.giveBack(hash, to: path)
        throw error
      }
    }
  }

  /// Records a blob file that a hand-over cut short by a crash left in the blob folder without
  /// its row (see ``adoptBlob(hash:file:descriptor:checked:)``), once every byte of it is
  /// checked: the device that handed it over may hold the content nowhere else.
  public func recoverBlob(hash: [UInt8]) async throws(HubError) -> Bool {
    if try await hasBlob(hash: hash) { return true }
    let folder = blobFolder
    guard let size = folder.size(of: hash), size > Self.fileThreshold else { return false }
    folder.touch(hash)
    guard let (found, digest) = try? folder.read(hash, to: nil), found == size, digest == hash
    else { return false }
    let started = Date().timeIntervalSince1970
    return try await write { db -> Bool in
      if try Self.storedBlobLocked(hash, db) != nil { return true }
      // A sweep may have removed it meanwhile, holding this lock.
      guard folder.size(of: hash) == size else { return false }
      try Self.recordBlobFile(hash, size: size, started: started, db)
      return true
    }
  }

  /// Records the blob file of `hash`, which no row names yet. Holding the write lock.
  static func recordBlobFile(_ hash: [UInt8], size: Int64, started: TimeInterval, _ db: Database)
    throws
  {
    try db.execute(
      sql: "INSERT INTO uploads (hash, started) VALUES (?, ?)", arguments: [Data(hash), started])
    try db.execute(
      sql: "INSERT INTO blobs (hash, size, upload, file) VALUES (?, ?, ?, 1)",
      arguments: [Data(hash), size, db.lastInsertedRowID])
    // Its bytes are checked against the key: whatever wanted it has it.
    try db.execute(sql: "DELETE FROM wanted WHERE hash = ?", arguments: [Data(hash)])
  }

  /// Writes the blob in chunks into the hub file, each chunk in its own transaction.
  func putChunks(hash: [UInt8], from fileDescriptor: Int32, checked: Bool)
    async throws(HubError)
  {
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
        let chunk = try BlobFile.readChunk(
          fileDescriptor, at: offset, count: Self.chunkSize, of: .caller)
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

  public var putsSmallBlobsTogether: Bool { true }

  public func putSmallBlobs(_ blobs: [[UInt8]: [UInt8]]) async throws(HubError) -> Set<[UInt8]> {
    let checked = blobs.filter {
      $0.value.count <= Self.chunkSize && Array(SHA256.hash(data: $0.value)) == $0.key
    }
    guard !checked.isEmpty else { return [] }
    let started = Date().timeIntervalSince1970
    // One write transaction (one commit, one sync of the journal) for the whole batch: each
    // blob is one chunk, so it is complete when the transaction commits.
    try await write { db in
      let exists = try db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM blobs WHERE hash = ?)")
      let upload = try db.cachedStatement(sql: "INSERT INTO uploads (hash, started) VALUES (?, ?)")
      let chunk = try db.cachedStatement(
        sql: #"INSERT INTO chunks (upload, "index", data) VALUES (?, 0, ?)"#)
      let blob = try db.cachedStatement(
        sql: "INSERT OR IGNORE INTO blobs (hash, size, upload) VALUES (?, ?, ?)")
      let wanted = try db.cachedStatement(sql: "DELETE FROM wanted WHERE hash = ?")
      for (hash, bytes) in checked {
        let key = Data(hash)
        if try Bool.fetchOne(exists, arguments: [key]) == true { continue }
        try upload.execute(arguments: [key, started])
        let id = db.lastInsertedRowID
        if !bytes.isEmpty { try chunk.execute(arguments: [id, Data(bytes)]) }
        try blob.execute(arguments: [key, bytes.count, id])
        // Another process completed the same blob first; its copy is as good as ours.
        if db.changesCount == 0 { try Self.discard(upload: id, db) }
        try wanted.execute(arguments: [key])
      }
    }
    return Set(checked.keys)
  }

  public func hasBlob(hash: [UInt8]) async throws(HubError) -> Bool {
    try await read { db in
      try Bool.fetchOne(
        db, sql: "SELECT EXISTS (SELECT 1 FROM blobs WHERE hash = ?)", arguments: [Data(hash)])
        ?? false
    }
  }

  public func fetchBlob(hash: [UInt8], to fileDescriptor: Int32) async throws(HubError) {
    let stored = try await read { db in try Self.storedBlobLocked(hash, db) }
    guard let stored else { throw .missingBlob(hash) }
    var offset: Int64 = 0
    let digest: [UInt8]
    if stored.file {
      // A stored blob's file is never written again, so it is read outside any transaction.
      (offset, digest) = try blobFolder.read(hash, to: fileDescriptor)
    } else {
      var hasher = SHA256()
      try await forEachChunk(of: stored.upload) { (chunk) throws(HubError) in
        hasher.update(data: chunk)
        try BlobFile.write(fileDescriptor, chunk, at: offset, of: .caller)
        offset += Int64(chunk.count)
      }
      digest = Array(hasher.finalize())
    }
    if ftruncate(fileDescriptor, off_t(offset)) != 0 {
      throw .local("cannot truncate the file for blob \(hexString(hash)): \(BlobFile.errorText())")
    }
    guard offset == stored.size else {
      throw .integrity(
        "blob \(hexString(hash)) arrived with \(offset) bytes instead of \(stored.size)")
    }
    guard digest == hash else {
      throw .integrity("blob \(hexString(hash)) arrived with SHA-256 \(hexString(digest))")
    }
  }

  public func smallBlobs(hashes: [[UInt8]], sizeLimit: Int) async throws(HubError)
    -> [[UInt8]: [UInt8]]
  {
    guard !hashes.isEmpty else { return [:] }
    // One read transaction for the whole request: each blob costs two indexed lookups, where
    // a fetch each took three transactions and as many hops to a reader thread.
    let stored = try await read { db -> [(hash: [UInt8], size: Int64, data: [UInt8]?)] in
      var found: [(hash: [UInt8], size: Int64, data: [UInt8]?)] = []
      let blob = try db.cachedStatement(
        sql: "SELECT size, upload, file FROM blobs WHERE hash = ?")
      let chunks = try db.cachedStatement(
        sql: #"SELECT data FROM chunks WHERE upload = ? ORDER BY "index""#)
      for hash in hashes {
        guard let row = try Row.fetchOne(blob, arguments: [Data(hash)]) else { continue }
        let size: Int64 = row["size"]
        let upload: Int64 = row["upload"]
        guard size <= Int64(sizeLimit) else { continue }
        if row["file"] as Bool {
          // Read from its file after the transaction.
          found.append((hash, size, nil))
          continue
        }
        var data: [UInt8] = []
        data.reserveCapacity(Int(size))
        for chunk in try Data.fetchAll(chunks, arguments: [upload]) { data += chunk }
        found.append((hash, size, data))
      }
      return found
    }
    var result: [[UInt8]: [UInt8]] = [:]
    for (hash, size, data) in stored {
      guard let data = data ?? blobFolder.contents(hash, limit: size) else { continue }
      if Int64(data.count) == size && Array(SHA256.hash(data: data)) == hash { result[hash] = data }
    }
    return result
  }

  /// The blob's size, upload and whether its bytes are a file, as stored; nil when the hub
  /// does not have it.
  static func storedBlobLocked(_ hash: [UInt8], _ db: Database) throws -> (
    size: Int64, upload: Int64, file: Bool
  )? {
    guard
      let row = try Row.fetchOne(
        db, sql: "SELECT size, upload, file FROM blobs WHERE hash = ?", arguments: [Data(hash)])
    else { return nil }
    return (row["size"], row["upload"], row["file"])
  }

  /// Removes the files of blobs that the hub dropped, after the transaction that dropped their
  /// rows committed; in a transaction of its own, so that a put recording the same blob again
  /// meanwhile keeps its file (it checks for the file under the same lock). A crash before
  /// this leaves files that ``sweepBlobFiles(olderThan:)`` removes.
  func removeBlobFiles(_ hashes: Set<Data>) async throws(HubError) {
    guard !hashes.isEmpty else { return }
    let folder = blobFolder
    try await write { db in
      for hash in hashes where try Self.storedBlobLocked(Array(hash), db)?.file != true {
        folder.remove(Array(hash))
      }
    }
  }

  /// Removes what puts and drops that a crash cut short left in the blob folder, untouched for
  /// `age` seconds (see ``BlobFolder/leftovers(olderThan:)``). Best effort: a hub that cannot
  /// be written now sweeps another time.
  func sweepBlobFiles(olderThan age: TimeInterval) async {
    let (temporaries, blobs) = blobFolder.leftovers(olderThan: age)
    for name in temporaries { blobFolder.discard(name) }
    guard !blobs.isEmpty else { return }
    try? await removeBlobFiles(Set(blobs.map { Data($0) }))
  }

  static func discard(upload: Int64, _ db: Database) throws {
    try db.execute(sql: "DELETE FROM chunks WHERE upload = ?", arguments: [upload])
    try db.execute(sql: "DELETE FROM uploads WHERE id = ?", arguments: [upload])
  }

  /// Hands the chunks of the upload `upload` to `body` in order. A stored blob is immutable, so
  /// reading it chunk by chunk in separate transactions is safe and keeps one chunk in memory
  /// at a time.
  func forEachChunk(of upload: Int64, _ body: (Data) async throws(HubError) -> Void)
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
      try await body(chunk)
      index += 1
    }
  }
}
