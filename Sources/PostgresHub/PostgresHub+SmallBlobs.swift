import Crypto
import Foundation
import Hub
import PostgresNIO

// Small blobs go up and down a batch at a time: a put or a fetch of one blob costs several
// statements (and a fetch one more per chunk), so 10,000 small files were 10,000 times that.
// Both stay plain statements under the account's row-level security and the schema's
// triggers, as a put of one blob is: nothing here can reach another account's rows, and a
// blob whose bytes do not hash to its key is never named.

extension PostgresHub {
  public var putsSmallBlobsTogether: Bool { true }

  public func putSmallBlobs(_ blobs: [[UInt8]: [UInt8]]) async throws(HubError) -> Set<[UInt8]> {
    // One chunk each, as putBlob stores a blob this small, and bytes that hash to their key;
    // the rest take putBlob, which says what is wrong.
    let checked = blobs.filter {
      $0.value.count <= Self.chunkSize && Array(SHA256.hash(data: $0.value)) == $0.key
    }
    guard !checked.isEmpty else { return [] }
    try await withTransaction { connection -> Void in
      let present = try await Self.storedHashes(
        checked.keys.map { ByteBuffer(bytes: $0) }, connection)
      // In the order of their keys, so that two devices putting overlapping batches take the
      // rows' locks in one order and one waits for the other rather than deadlocking.
      let fresh = checked.filter { !present.contains($0.key) }
        .sorted { $0.key.lexicographicallyPrecedes($1.key) }
      guard !fresh.isEmpty else { return }
      let uploads = fresh.map { _ in UUID() }
      let keys = fresh.map { ByteBuffer(bytes: $0.key) }
      let sizes = fresh.map { Int64($0.value.count) }
      try await connection.run(
        """
        INSERT INTO docsync.uploads (id, hash)
        SELECT * FROM unnest(\(uploads)::uuid[], \(keys)::bytea[])
        """)
      // A blob of one chunk: the chunk's hash is the blob's. An empty blob has no chunk.
      let filled = fresh.indices.filter { !fresh[$0].value.isEmpty }
      if !filled.isEmpty {
        let chunkUploads = filled.map { uploads[$0] }
        let chunkKeys = filled.map { keys[$0] }
        let data = filled.map { ByteBuffer(bytes: fresh[$0].value) }
        try await connection.run(
          """
          INSERT INTO docsync.chunks (upload, index, hash, data)
          SELECT u, 0, h, d FROM unnest(\(chunkUploads)::uuid[], \(chunkKeys)::bytea[],
            \(data)::bytea[]) AS t (u, h, d)
          """)
      }
      // Naming a blob ends the hub's want of it (the blob trigger of schema step 3).
      let rows = try await connection.rows(
        """
        INSERT INTO docsync.blobs (hash, size, upload)
        SELECT h, s, u FROM unnest(\(keys)::bytea[], \(sizes)::int8[], \(uploads)::uuid[])
          AS t (h, s, u)
        ORDER BY h
        ON CONFLICT DO NOTHING RETURNING upload
        """)
      var named: Set<UUID> = []
      for upload in try rows.decode(UUID.self) { named.insert(upload) }
      // Another device completed the same blob first; its copy is as good as ours.
      let beaten = uploads.filter { !named.contains($0) }
      if !beaten.isEmpty {
        try await connection.run(
          "SELECT docsync.discard_upload(u) FROM unnest(\(beaten)::uuid[]) AS t (u)")
      }
    }
    return Set(checked.keys)
  }

  public func smallBlobs(hashes: [[UInt8]], sizeLimit: Int) async throws(HubError)
    -> [[UInt8]: [UInt8]]
  {
    guard !hashes.isEmpty else { return [:] }
    let keys = hashes.map { ByteBuffer(bytes: $0) }
    let limit = Int64(sizeLimit)
    // One statement for the page: every chunk of every blob asked for, in order. A stored blob
    // is immutable, so one statement sees each whole.
    let chunks = try await withConnection { connection -> [SmallBlobChunk] in
      let rows = try await connection.rows(
        """
        SELECT b.hash, b.size, c.index, c.data
        FROM docsync.blobs AS b LEFT JOIN docsync.chunks AS c ON c.upload = b.upload
        WHERE b.account = docsync.current_account() AND b.hash = ANY(\(keys)::bytea[])
          AND b.size <= \(limit)
        ORDER BY b.hash, c.index
        """)
      var found: [SmallBlobChunk] = []
      for (hash, size, index, data) in try rows.decode(
        (ByteBuffer, Int64, Int32?, ByteBuffer?).self)
      {
        found.append(
          SmallBlobChunk(
            hash: Array(hash.readableBytesView), size: size, index: index,
            data: data.map { Array($0.readableBytesView) }))
      }
      return found
    }
    return Self.assemble(chunks)
  }

  /// The blobs that `chunks` (ordered by hash, then index) make up, each checked here against
  /// its hash: one with a chunk missing, the wrong size or other bytes is left out, for
  /// fetchBlob to report.
  static func assemble(_ chunks: [SmallBlobChunk]) -> [[UInt8]: [UInt8]] {
    var result: [[UInt8]: [UInt8]] = [:]
    var start = chunks.startIndex
    while start < chunks.endIndex {
      let hash = chunks[start].hash
      var end = start
      var bytes: [UInt8] = []
      var complete = true
      while end < chunks.endIndex && chunks[end].hash == hash {
        if let data = chunks[end].data {
          complete = complete && chunks[end].index == Int32(end - start)
          bytes += data
        }
        end += 1
      }
      if complete && Int64(bytes.count) == chunks[start].size
        && Array(SHA256.hash(data: bytes)) == hash
      {
        result[hash] = bytes
      }
      start = end
    }
    return result
  }

  /// Which of `keys` the caller's account has as finished blobs.
  static func storedHashes(_ keys: [ByteBuffer], _ connection: PostgresConnection) async throws
    -> Set<[UInt8]>
  {
    let rows = try await connection.rows(
      """
      SELECT hash FROM docsync.blobs
      WHERE account = docsync.current_account() AND hash = ANY(\(keys)::bytea[])
      """)
    var found: Set<[UInt8]> = []
    for hash in try rows.decode(ByteBuffer.self) {
      found.insert(Array(hash.readableBytesView))
    }
    return found
  }
}
