import Hub
import PostgresNIO

// The server checks a reported blob itself (docsync.report_damaged_blob, step 3 of the
// schema): a device has no right to drop a blob, only to say that one looked damaged.

extension PostgresHub {
  public func reportDamagedBlob(hash: [UInt8]) async throws(HubError) -> BlobCondition {
    try await withTransaction { connection -> BlobCondition in
      let rows = try await connection.rows(
        "SELECT docsync.report_damaged_blob(\(ByteBuffer(bytes: hash)))")
      for condition in try rows.decode(String.self) {
        return BlobCondition(rawValue: condition) ?? .unknown
      }
      return .unknown
    }
  }

  public func wantedBlobs() async throws(HubError) -> [[UInt8]] {
    try await withConnection { connection -> [[UInt8]] in
      let rows = try await connection.rows(
        """
        SELECT hash FROM docsync.wanted WHERE account = docsync.current_account() ORDER BY hash
        """)
      var hashes: [[UInt8]] = []
      for hash in try rows.decode(ByteBuffer.self) {
        hashes.append(Array(hash.readableBytesView))
      }
      return hashes
    }
  }
}
