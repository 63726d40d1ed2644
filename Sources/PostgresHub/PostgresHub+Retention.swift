import Hub
import PostgresNIO

// Retention on PostgreSQL goes through the SECURITY DEFINER functions of
// Migrations/v0004_retention.sql: a device holds no UPDATE or DELETE on records or blobs, and
// docsync.prune_records releases only what the account's retention lets go.
extension PostgresHub {
  public func retention() async throws(HubError) -> String? {
    try await withConnection { connection in
      let rows = try await connection.query(
        "SELECT docsync.retention()", logger: Connections.logger)
      var value: String?
      for try await stored in rows.decode(String?.self) { value = stored }
      return value
    }
  }

  public func setRetention(_ serialized: String) async throws(HubError) {
    try await withConnection { connection in
      let rows = try await connection.query(
        "SELECT docsync.set_retention(\(serialized))", logger: Connections.logger)
      for try await _ in rows {}
    }
  }

  public func prune(records ids: [[UInt8]]) async throws(HubError) {
    if ids.isEmpty { return }
    try await withConnection { connection in
      let rows = try await connection.query(
        "SELECT docsync.prune_records(\(ids.map { ByteBuffer(bytes: $0) }))",
        logger: Connections.logger)
      for try await _ in rows {}
    }
  }
}
