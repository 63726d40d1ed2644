import Hub
import PostgresNIO
import Testing

@testable import PostgresHub

/// Step 14 (Migrations/v0014_objects_keyed_by_number.sql) rewrites the objects table with a
/// bigint key and refs of keys, and devices read it through functions: a hub that the step
/// before left with objects and wanted objects keeps every one, reads, checks, repairs and
/// sweeps them as before, and keeps them from another account's devices.
@Suite("PostgresHub keyed object rows upgrade", .enabled(if: PostgresTestCluster.isEnabled))
struct PostgresKeyedObjectUpgradeTests {
  @Test func aHubAtTheStepBeforeUpgradesItsObjects() async throws {
    // The accounts' roles are the cluster's; a second database holds the older hub.
    let (_, xDevice, _, xURL, yURL) = try await PostgresTestCluster.twoAccounts()
    let database = try await PostgresTestCluster.createDatabase()
    let before = Migrations.steps.last { $0.version < Migrations.objectsKeyedByNumber }!.version
    try await PostgresTestCluster.withAdminConnection(database: database) {
      connection -> Void in
      try await Migrations.apply(on: connection, through: before)
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
    /// The rows of object `id` of any account, as the superuser counts them.
    func rows(_ id: [UInt8]) async throws -> Int {
      try await PostgresTestCluster.withAdminConnection(database: database) { connection in
        let rows = try await connection.query(
          """
          SELECT count(*) FROM docsync.objects
          WHERE key = docsync.object_key(\(ByteBuffer(bytes: id)))
          """, logger: PostgresTestCluster.logger)
        var count = -1
        for try await found in rows.decode(Int.self) { count = found }
        return count
      }
    }
    // One flipped byte in the stored object, as a damaged disk would; the id is a column
    // before the step and a key and the rest after it.
    func corrupt(_ object: HubObject, keyed: Bool) async throws {
      try await PostgresTestCluster.withAdminConnection(database: database) {
        connection -> Void in
        let id = ByteBuffer(bytes: object.id)
        try await connection.query(
          keyed
            ? """
            UPDATE docsync.objects SET data = set_byte(data, 1, get_byte(data, 1) # 255)
            WHERE int8send(key) || rest = \(id)
            """
            : """
            UPDATE docsync.objects SET data = set_byte(data, 1, get_byte(data, 1) # 255)
            WHERE id = \(id)
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

    // The step before: a device of a role that may not change the schema works on it as it is,
    // reading the table.
    let xOld = try PostgresHub(location: moved(xURL))
    try await xOld.putObjects([shared, onlyFirst, onlySecond, first, second, lost, loose])
    try await xOld.append([firstRecord, secondRecord])
    try await corrupt(lost, keyed: false)
    #expect(try await xOld.objects([lost.id]).isEmpty)
    #expect(try await xOld.wantedObjects() == [lost.id])
    let yOld = try PostgresHub(location: moved(yURL))
    try await yOld.putObjects([yChunk])
    #expect(try await steps() == before)

    let upgraded = try await PostgresTestCluster.withAdminConnection(database: database) {
      connection in
      try await Migrations.run(on: connection)
    }
    #expect(upgraded == Migrations.steps.last!.version)
    #expect(try await steps() >= Migrations.objectsKeyedByNumber)

    let x = try PostgresHub(location: moved(xURL))
    let kept = [shared, onlyFirst, onlySecond, first, second, loose]
    let read = try await x.objects(kept.map(\.id))
    #expect(read.count == kept.count)
    for object in kept { #expect(read[object.id] == object.data) }
    #expect(try await x.wantedObjects() == [lost.id])
    #expect(try await x.missingObjects([shared.id, lost.id]) == [lost.id])
    // The converted checks still find the hub's own damage.
    try await corrupt(loose, keyed: true)
    #expect(try await x.objects([loose.id]).isEmpty)
    #expect(
      try await x.wantedObjects()
        == [lost.id, loose.id].sorted { $0.lexicographicallyPrecedes($1) })
    // A wanted object put again is stored with the new check, and no longer wanted; a node
    // that names an absent child is still refused, naming it.
    try await x.putObjects([lost])
    #expect(try await x.objects([lost.id]) == [lost.id: lost.data])
    #expect(try await x.wantedObjects() == [loose.id])
    let orphan = node("orphan", [chunk("never put")])
    var refusal: HubError?
    do { try await x.putObjects([orphan]) } catch { refusal = error }
    if case .missingBlob(let absent) = refusal {
      #expect(absent == chunk("never put").id)
    } else {
      Issue.record("a node whose child is absent: \(String(describing: refusal))")
    }
    // A record that names an object the hub lacks is refused; one that names a stored root
    // is kept.
    refusal = nil
    do { try await x.append([makeRecord("names the orphan", blobs: [orphan.id])]) } catch {
      refusal = error
    }
    if case .missingBlob(let absent) = refusal {
      #expect(absent == orphan.id)
    } else {
      Issue.record("a record that names an absent object: \(String(describing: refusal))")
    }

    // Two devices of the account that put one new object at once store it once.
    let (a, b) = (try PostgresHub(location: moved(xURL)), try PostgresHub(location: moved(xURL)))
    let twice = chunk("put by two at once")
    try await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask { try await a.putObjects([twice]) }
      group.addTask { try await b.putObjects([twice]) }
      try await group.waitForAll()
    }
    #expect(try await rows(twice.id) == 1)

    // The sweep frees at once what only the forgotten record reached, keeps what the other
    // still reaches, keeps a recent upload no record names yet, and keeps an old chunk that a
    // recent node names (a node put, its record not appended yet).
    try await admin("UPDATE docsync.objects SET touched = touched - interval '2 days'")
    let fresh = chunk("fresh")
    let pendingChunk = chunk("pending")
    let pending = node("pending", [pendingChunk])
    try await x.putObjects([fresh, pendingChunk, pending])
    try await admin(
      """
      UPDATE docsync.objects SET touched = touched - interval '2 days'
      WHERE int8send(key) || rest = '\\x\(hexString(pendingChunk.id))'::bytea
      """)
    try await x.forget(records: [firstRecord.id])
    let left = try await x.objects(
      kept.map(\.id) + [lost.id, fresh.id, pendingChunk.id, pending.id, twice.id])
    #expect(
      Set(left.keys)
        == Set([shared, onlySecond, second, fresh, pendingChunk, pending].map(\.id)))
    #expect(try await x.objects([shared.id, onlySecond.id, second.id]).count == 3)

    // Y still reads its own object and none of X's; X none of Y's.
    let y = try PostgresHub(location: moved(yURL))
    #expect(try await y.objects([yChunk.id]) == [yChunk.id: yChunk.data])
    #expect(try await y.objects([shared.id, second.id]).isEmpty)
    #expect(try await y.missingObjects([shared.id]) == [shared.id])
    #expect(try await y.wantedObjects().isEmpty)
    #expect(try await x.objects([yChunk.id]).isEmpty)
    #expect(try await rows(yChunk.id) == 1)
    try await PostgresTestCluster.withConnection(
      user: xDevice, password: "x-pw", database: database
    ) { connection in
      let own = try await connection.query(
        """
        SELECT count(*) FROM docsync.read_objects(
          ARRAY[\(ByteBuffer(bytes: second.id)), \(ByteBuffer(bytes: yChunk.id))])
        """, logger: PostgresTestCluster.logger)
      for try await count in own.decode(Int.self) { #expect(count == 1) }
      // Least privilege: a device reads objects only through the functions, writes no object
      // row and reads no account's number but its own.
      let refused = [
        "SELECT count(*) FROM docsync.objects",
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
