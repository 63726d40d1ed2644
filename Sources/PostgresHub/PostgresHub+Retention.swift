import Hub
import PostgresNIO

// Retention and forgetting on PostgreSQL go through the SECURITY DEFINER functions of
// Migrations/v0004_retention.sql and v0005_erasures_and_forget.sql: a device holds no UPDATE
// or DELETE on records or blobs, docsync.prune_records releases only what the account's
// retention lets go, and docsync.forget_records deletes only the caller's account's records.
extension PostgresHub {
  public func retention() async throws(HubError) -> String? {
    try await withConnection { connection in
      let rows = try await connection.rows(
        "SELECT docsync.retention()")
      var value: String?
      for stored in try rows.decode(String?.self) { value = stored }
      return value
    }
  }

  public func setRetention(_ serialized: String) async throws(HubError) {
    try await withTransaction { connection in
      try await connection.run(
        "SELECT docsync.set_retention(\(serialized))")
    }
  }

  public func prune(records ids: [[UInt8]]) async throws(HubError) {
    if ids.isEmpty { return }
    try await withTransaction { connection in
      try await connection.run(
        "SELECT docsync.prune_records(\(ids.map { ByteBuffer(bytes: $0) }))")
    }
  }

  public func forget(records ids: [[UInt8]]) async throws(HubError) {
    if ids.isEmpty { return }
    try await withTransaction { connection in
      try await connection.run(
        "SELECT docsync.forget_records(\(ids.map { ByteBuffer(bytes: $0) }))")
    }
  }

  public func erasures(after cursor: HubCursor, limit: Int) async throws(HubError) -> ErasurePage {
    guard limit > 0 else {
      throw .failed("a page of erasures needs a positive limit, not \(limit)")
    }
    let after = try Self.sequence(of: cursor)
    return try await withConnection { connection in
      let rows = try await connection.rows(
        "SELECT seq, id, forgotten FROM docsync.erasures_after(\(after), \(Int32(limit)))")
      var erasures: [Erasure] = []
      var last = after
      for (seq, id, forgotten) in try rows.decode((Int64, ByteBuffer, Bool).self) {
        erasures.append(
          Erasure(id: Array(id.readableBytesView), kind: forgotten ? .forgotten : .released))
        last = seq
      }
      return ErasurePage(
        erasures: erasures, cursor: erasures.isEmpty ? cursor : Self.cursor(at: last))
    }
  }
}
