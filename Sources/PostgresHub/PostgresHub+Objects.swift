import Crypto
import Hub
import PostgresNIO

// Content objects on PostgreSQL go through the SECURITY DEFINER functions of
// Migrations/v0009_content_objects.sql: a device reads its account's objects under row-level
// security and writes none of them directly, so it can neither damage a stored object nor
// remove one; the functions check what they store and keep the hub's own check of each.
// Reads name no account: before step 14, row-level security gives a device its own account's
// rows, whether the hub keys them by the account's name (steps 9 to 11) or by its number (step
// 12, Migrations/v0012_smaller_object_rows.sql). From step 14
// (Migrations/v0014_objects_keyed_by_number.sql) a row holds an id cut in two, and a device
// reads through docsync.read_objects and docsync.present_objects, which filter by its account.
extension PostgresHub: ObjectStore {
  public func missingObjects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]] {
    guard !ids.isEmpty else { return [] }
    try HubObject.check(ids: ids)
    // A write: the objects it finds are touched, so that the sweep leaves them to the records
    // about to name them.
    return try await withTransaction { connection in
      let rows = try await connection.rows(
        "SELECT docsync.missing_objects(\(ids.map { ByteBuffer(bytes: $0) })::bytea[])")
      var missing: [[UInt8]] = []
      for id in try rows.decode(ByteBuffer.self) {
        missing.append(Array(id.readableBytesView))
      }
      return missing
    }
  }

  public func putObjects(_ objects: [HubObject]) async throws(HubError) {
    guard !objects.isEmpty else { return }
    try HubObject.check(objects)
    let references = Set(objects.flatMap(\.references))
    try await withTransaction { connection in
      // Children first: the function refuses a node whose child is absent too, but only here
      // can the refusal name the child, as the protocol says.
      if !references.isEmpty {
        let stored = try await Self.storedObjectIDs(
          references.map { ByteBuffer(bytes: $0) },
          throughFunctions: await self.readsObjectsThroughFunctions(), connection)
        var earlier: Set<[UInt8]> = []
        for object in objects {
          if let absent = object.references.first(where: {
            !stored.contains($0) && !earlier.contains($0)
          }) {
            throw HubError.missingBlob(absent)
          }
          earlier.insert(object.id)
        }
      }
      try await connection.run(
        """
        SELECT docsync.put_objects(\(objects.map { ByteBuffer(bytes: $0.id) })::bytea[],
          \(objects.map { ByteBuffer(bytes: $0.data) })::bytea[],
          \(objects.map { ByteBuffer(bytes: $0.references.joined()) })::bytea[])
        """)
    }
  }

  public func objects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]: [UInt8]] {
    guard !ids.isEmpty else { return [:] }
    try HubObject.check(ids: ids)
    let stored = try await withConnection { connection in
      let asked = ids.map { ByteBuffer(bytes: $0) }
      let rows =
        await self.readsObjectsThroughFunctions()
        ? try await connection.rows(
          """
          SELECT id, data, "check" FROM docsync.read_objects(\(asked)::bytea[])
          """)
        : try await connection.rows(
          """
          SELECT id, data, "check" FROM docsync.objects WHERE id = ANY(\(asked)::bytea[])
          """)
      var found: [(id: [UInt8], data: [UInt8], check: [UInt8])] = []
      for (id, data, check) in try rows.decode((ByteBuffer, ByteBuffer, ByteBuffer).self) {
        found.append(
          (
            Array(id.readableBytesView), Array(data.readableBytesView),
            Array(check.readableBytesView)
          ))
      }
      return found
    }
    var result: [[UInt8]: [UInt8]] = [:]
    var damaged: [[UInt8]] = []
    for object in stored {
      // The stored bytes against the hub's own check: what arrived damaged, whether on the
      // server's disk or on the way, is left out and reported. The check is the SHA-256's
      // first 8 bytes from step 12 on, all 32 before.
      let digest = Array(SHA256.hash(data: object.data))
      if !object.check.isEmpty && digest.prefix(object.check.count).elementsEqual(object.check) {
        result[object.id] = object.data
      } else {
        damaged.append(object.id)
      }
    }
    for id in damaged {
      try await withTransaction { connection in
        try await connection.run(
          "SELECT docsync.report_damaged_object(\(ByteBuffer(bytes: id)))")
      }
    }
    return result
  }

  public func wantedObjects() async throws(HubError) -> [[UInt8]] {
    try await withConnection { connection in
      let rows = try await connection.rows(
        """
        SELECT id FROM docsync.wanted_objects ORDER BY id
        """)
      var wanted: [[UInt8]] = []
      for id in try rows.decode(ByteBuffer.self) {
        wanted.append(Array(id.readableBytesView))
      }
      return wanted
    }
  }

  /// Whether this hub's devices read objects through functions; known once a connection has
  /// looked at the schema, as every caller's has.
  func readsObjectsThroughFunctions() async -> Bool {
    await connections.schemaVersion >= Migrations.objectsKeyedByNumber
  }

  static func storedObjectIDs(
    _ ids: [ByteBuffer], throughFunctions: Bool, _ connection: PostgresConnection
  ) async throws -> Set<[UInt8]> {
    let rows =
      throughFunctions
      ? try await connection.rows("SELECT docsync.present_objects(\(ids)::bytea[])")
      : try await connection.rows(
        """
        SELECT id FROM docsync.objects WHERE id = ANY(\(ids)::bytea[])
        """)
    var found: Set<[UInt8]> = []
    for id in try rows.decode(ByteBuffer.self) { found.insert(Array(id.readableBytesView)) }
    return found
  }
}
