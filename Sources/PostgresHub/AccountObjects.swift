import Crypto
import Hub
import PostgresNIO

/// The objects of one account, reached from the administrator's connection as a device of that
/// account reaches them: every call is a transaction that acts as the account
/// (`docsync.acting_account`, which only the schema owner's session may set, see
/// Migrations/v0015_blob_twins.sql) and goes through the devices' own functions, so their
/// checks and row-level security apply to what `docsync hub init` puts.
struct AccountObjects: ObjectStore {
  let connection: PostgresConnection
  /// The account's role, `docsync_account_NAME`.
  let account: String

  /// Runs `body` in a transaction that acts as the account.
  func acting<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
    async throws(HubError) -> T
  {
    let account = account
    do {
      return try await connection.inTransaction { connection in
        try await connection.run(
          "SELECT set_config('docsync.acting_account', \(account), true)")
        return try await body(connection)
      }
    } catch {
      throw HubError(postgres: error, location: "the hub")
    }
  }

  func missingObjects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]] {
    guard !ids.isEmpty else { return [] }
    try HubObject.check(ids: ids)
    return try await acting { connection in
      let rows = try await connection.rows(
        "SELECT docsync.missing_objects(\(ids.map { ByteBuffer(bytes: $0) })::bytea[])")
      var missing: [[UInt8]] = []
      for id in try rows.decode(ByteBuffer.self) { missing.append(Array(id.readableBytesView)) }
      return missing
    }
  }

  func putObjects(_ objects: [HubObject]) async throws(HubError) {
    guard !objects.isEmpty else { return }
    try HubObject.check(objects)
    try await acting { connection in
      try await connection.run(
        """
        SELECT docsync.put_objects(\(objects.map { ByteBuffer(bytes: $0.id) })::bytea[],
          \(objects.map { ByteBuffer(bytes: $0.data) })::bytea[],
          \(objects.map { ByteBuffer(bytes: $0.references.joined()) })::bytea[])
        """)
    }
  }

  func objects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]: [UInt8]] {
    guard !ids.isEmpty else { return [:] }
    try HubObject.check(ids: ids)
    return try await acting { connection in
      let rows = try await connection.rows(
        """
        SELECT id, data, "check"
        FROM docsync.read_objects(\(ids.map { ByteBuffer(bytes: $0) })::bytea[])
        """)
      var found: [[UInt8]: [UInt8]] = [:]
      for (id, data, check) in try rows.decode((ByteBuffer, ByteBuffer, ByteBuffer).self) {
        // Only bytes that pass the hub's own check; the devices report the rest.
        let bytes = Array(data.readableBytesView)
        let expected = Array(check.readableBytesView)
        guard !expected.isEmpty, Array(SHA256.hash(data: bytes)).starts(with: expected) else {
          continue
        }
        found[Array(id.readableBytesView)] = bytes
      }
      return found
    }
  }

  func wantedObjects() async throws(HubError) -> [[UInt8]] {
    try await acting { connection in
      let rows = try await connection.rows("SELECT id FROM docsync.wanted_objects ORDER BY id")
      var wanted: [[UInt8]] = []
      for id in try rows.decode(ByteBuffer.self) { wanted.append(Array(id.readableBytesView)) }
      return wanted
    }
  }
}
