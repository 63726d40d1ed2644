import Hub
import PostgresNIO

// Retention and forgetting on PostgreSQL go through the SECURITY DEFINER functions of
// Migrations/v0004_retention.sql and v0005_erasures_and_forget.sql: a device holds no UPDATE
// or DELETE on records or blobs, docsync.prune_records releases only what the account's
// retention lets go, and docsync.forget_records deletes only the caller's account's records.
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
    try await withTransaction { connection in
      let rows = try await connection.query(
        "SELECT docsync.set_retention(\(serialized))", logger: Connections.logger)
      for try await _ in rows {}
    }
  }

  public func prune(records ids: [[UInt8]]) async throws(HubError) {
    if ids.isEmpty { return }
    try await withTransaction { connection in
      let rows = try await connection.query(
        "SELECT docsync.prune_records(\(ids.map { ByteBuffer(bytes: $0) }))",
        logger: Connections.logger)
      for try await _ in rows {}
    }
  }

  public func forget(records ids: [[UInt8]]) async throws(HubError) {
    if ids.isEmpty { return }
    try await withTransaction { connection in
      let rows = try await connection.query(
        "SELECT docsync.forget_records(\(ids.map { ByteBuffer(bytes: $0) }))",
        logger: Connections.logger)
      for try await _ in rows {}
    }
  }

  public func erasures(after cursor: HubCursor, limit: Int) async throws(HubError) -> ErasurePage {
    guard limit > 0 else {
      throw .failed("a page of erasures needs a positive limit, not \(limit)")
    }
    let after = try Self.sequence(of: cursor)
    return try await withConnection { connection in
      let rows = try await connection.query(
        "SELECT seq, id, forgotten FROM docsync.erasures_after(\(after), \(Int32(limit)))",
        logger: Connections.logger)
      var erasures: [Erasure] = []
      var last = after
      for try await (seq, id, forgotten) in rows.decode((Int64, ByteBuffer, Bool).self) {
        erasures.append(
          Erasure(id: Array(id.readableBytesView), kind: forgotten ? .forgotten : .released))
        last = seq
      }
      return ErasurePage(
        erasures: erasures, cursor: erasures.isEmpty ? cursor : Self.cursor(at: last))
    }
  }
}
