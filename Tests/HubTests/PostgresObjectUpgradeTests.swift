import Hub
import PostgresNIO
import Testing

@testable import PostgresHub

/// Step 12 (Migrations/v0012_smaller_object_rows.sql) rewrites the object tables: a hub that
/// step 11 left with objects and wanted objects keeps every one, reads, checks and sweeps them
/// as before, and keeps them from another account's devices.
@Suite("PostgresHub object rows upgrade", .enabled(if: PostgresTestCluster.isEnabled))
struct PostgresObjectUpgradeTests {
  @Test func aHubAtStepElevenUpgradesItsObjects() async throws {
    // The accounts' roles are the cluster's; a second database holds the step-11 hub.
    let (_, xDevice, _, xURL, yURL) = try await PostgresTestCluster.twoAccounts()
    let database = try await PostgresTestCluster.createDatabase()
    try await PostgresTestCluster.withAdminConnection(database: database) {
      connection -> Void in
      try await Migrations.apply(on: connection, through: 11)
    }
    func moved(_ url: String) -> String {
      let path = url.split(separator: "?")[0]
      let host = path[..<path.lastIndex(of: "/")!]
      return "\(host)/\(database)?\(url.split(separator: "?")[1])"
    }
    func steps() async throws -> Int {
      try await PostgresTestCluster.withAdminConnection(database: database) { connection in
        try await Migrations.appliedVersion(connection)
      }
    }
    func admin(_ sql: String) async throws {
      try await PostgresTestCluster.adminQuery(sql, database: database)
    }
    func corrupt(_ object: HubObject) async throws {
      try await PostgresTestCluster.withAdminConnection(database: database) {
        connection -> Void in
        try await connection.query(
          """
          UPDATE docsync.objects SET data = set_byte(data, 1, get_byte(data, 1) # 255)
          WHERE id = \(ByteBuffer(bytes: object.id))
          """, logger: PostgresTestCluster.logger)
      }
    }

    let chunk = ObjectStoreConformance.chunk
    let node = ObjectStoreConformance.node
    let (shared, onlyFirst, onlySecond, lost, loose) = (
      chunk("shared"), chunk("only first"), chunk("only second"), chunk("lost"), chunk("loose")
    )
    let first = node("first", [shared, onlyFirst])
    let second = node("second", [shared, onlySecond])
    let firstRecord = makeRecord("first", blobs: [first.id])
    let secondRecord = makeRecord("second", blobs: [second.id])
    let yChunk = chunk("y's own")

    // Step 11: a device of a role that may not change the schema works on it as it is.
    let xOld = try PostgresHub(location: moved(xURL))
    try await xOld.putObjects([shared, onlyFirst, onlySecond, first, second, lost, loose])
    try await xOld.append([firstRecord, secondRecord])
    try await corrupt(lost)
    #expect(try await xOld.objects([lost.id]).isEmpty)
    #expect(try await xOld.wantedObjects() == [lost.id])
    let yOld = try PostgresHub(location: moved(yURL))
    try await yOld.putObjects([yChunk])
    #expect(try await steps() == 11)

    // To step 12 only: PostgresKeyedObjectUpgradeTests takes a hub on to step 14, whose rows
    // this test's raw SQL does not name.
    try await PostgresTestCluster.withAdminConnection(database: database) {
      connection -> Void in
      try await Migrations.apply(on: connection, through: 12)
    }
    #expect(try await steps() == 12)

    let x = try PostgresHub(location: moved(xURL))
    let kept = [shared, onlyFirst, onlySecond, first, second, loose]
    let read = try await x.objects(kept.map(\.id))
    #expect(read.count == kept.count)
    for object in kept { #expect(read[object.id] == object.data) }
    #expect(try await x.wantedObjects() == [lost.id])
    #expect(try await x.missingObjects([shared.id, lost.id]) == [lost.id])
    // The converted checks still find the hub's own damage.
    try await corrupt(loose)
    #expect(try await x.objects([loose.id]).isEmpty)
    #expect(
      try await x.wantedObjects()
        == [lost.id, loose.id].sorted { $0.lexicographicallyPrecedes($1) })
    // A wanted object put again is stored with the new check, and no longer wanted.
    try await x.putObjects([lost])
    #expect(try await x.objects([lost.id]) == [lost.id: lost.data])
    #expect(try await x.wantedObjects() == [loose.id])

    // The sweep frees at once what only the forgotten record reached, keeps what the other
    // still reaches, and keeps a recent upload no record names yet.
    try await admin("UPDATE docsync.objects SET touched = touched - interval '2 days'")
    let fresh = chunk("fresh")
    try await x.putObjects([fresh])
    try await x.forget(records: [firstRecord.id])
    let left = try await x.objects(kept.map(\.id) + [lost.id, fresh.id])
    #expect(Set(left.keys) == Set([shared, onlySecond, second, fresh].map(\.id)))

    // Y still reads its own object and none of X's; X none of Y's.
    let y = try PostgresHub(location: moved(yURL))
    #expect(try await y.objects([yChunk.id]) == [yChunk.id: yChunk.data])
    #expect(try await y.objects([shared.id, second.id]).isEmpty)
    #expect(try await y.wantedObjects().isEmpty)
    #expect(try await x.objects([yChunk.id]).isEmpty)
    try await PostgresTestCluster.withConnection(
      user: xDevice, password: "x-pw", database: database
    ) { connection in
      let rows = try await connection.query(
        "SELECT count(*) FROM docsync.objects", logger: PostgresTestCluster.logger)
      for try await count in rows.decode(Int.self) { #expect(count == 4) }
      // Least privilege as before: a device writes no object row and reads no account's
      // number but its own.
      let refused = [
        "SELECT * FROM docsync.account_numbers",
        "SELECT docsync.own_account_number()",
        "UPDATE docsync.objects SET touched = now()",
        "DELETE FROM docsync.objects",
        "INSERT INTO docsync.wanted_objects (id) VALUES ('\\x01')",
        "SELECT docsync.sweep_objects(ARRAY['\\x01'::bytea])",
      ]
      for sql in refused {
        do {
          try await connection.query(
            PostgresQuery(unsafeSQL: sql), logger: PostgresTestCluster.logger)
          Issue.record("accepted: \(sql)")
        } catch let error as PSQLError {
          #expect(error.serverInfo?[.sqlState] == "42501", "\(sql): \(String(reflecting: error))")
        }
      }
    }
  }
}
