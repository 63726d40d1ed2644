import ContentModel
import DocumentModel
import Foundation
import PostgresNIO
import Testing

@testable import Hub
@testable import PostgresHub

/// Old blobs cut into chunks on PostgreSQL by `docsync hub init` (step 15): every version stays
/// readable, versions share chunks, a conversion stopped anywhere loses nothing, forget drops
/// what no record needs, and one account never sees another's twins.
@Suite("PostgresHub blob twins", .enabled(if: PostgresTestCluster.isEnabled))
struct PostgresBlobTwinTests {
  /// The administrator's URL of `database`.
  static func adminURL(_ database: String) throws -> String {
    let admin = try PostgresTestCluster.admin
    return "postgres://\(admin.user):\(admin.password ?? "")@\(admin.host):\(admin.port)/"
      + "\(database)?sslmode=disable"
  }

  /// `count` versions of one file of `size` bytes, each a few bytes edited from the one
  /// before, put as blobs and named by one record each, as before chunks.
  static func makeLibrary(_ hub: PostgresHub, count: Int, size: Int, seed: UInt64 = 7)
    async throws -> (contents: [[UInt8]], records: [HubRecord])
  {
    var content = SQLiteBlobTwinTests.pseudoRandom(size, seed: seed)
    var made: (contents: [[UInt8]], records: [HubRecord]) = ([], [])
    for index in 0..<count {
      if index > 0 {
        let at = (index * 48_611) % (size - 16)
        for offset in 0..<16 { content[at + offset] ^= UInt8(index) }
      }
      let hash = try await putBlob(hub, content)
      let record = makeRecord("\(seed) v\(index)", blobs: [hash])
      try await hub.append([record])
      made.contents.append(content)
      made.records.append(record)
    }
    return made
  }

  /// Every content as a device gets it now: its twin's objects, else its blob.
  static func expectReadable(
    _ contents: [[UInt8]], _ hub: PostgresHub, skipping: Set<Int> = [],
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    for (index, content) in contents.enumerated() where !skipping.contains(index) {
      let hash = HubHash.sha256(content)
      let read: [UInt8]
      if let root = try await hub.blobRoots([hash])[hash] {
        read = try await SQLiteBlobTwinTests.assemble(root, from: hub)
      } else {
        read = try await fetchBlob(hub, hash)
      }
      #expect(read == content, "version \(index)", sourceLocation: sourceLocation)
    }
  }

  /// A number from the administrator's side of `database`.
  static func count(_ sql: String, in database: String) async throws -> Int {
    try await PostgresTestCluster.withAdminConnection(database: database) { connection in
      let rows = try await connection.query(
        PostgresQuery(unsafeSQL: sql), logger: PostgresTestCluster.logger)
      for try await value in rows.decode(Int.self) { return value }
      return -1
    }
  }

  @Test func hubInitConvertsEveryAccountsBlobsAndKeepsThemApart() async throws {
    let (database, xDevice, _, xURL, yURL) = try await PostgresTestCluster.twoAccounts()
    let x = try PostgresHub(location: xURL)
    let y = try PostgresHub(location: yURL)
    let made = try await Self.makeLibrary(x, count: 12, size: 600_000)
    let yMade = try await Self.makeLibrary(y, count: 2, size: 100_000, seed: 9)
    let blobBytes = try await Self.count(
      "SELECT sum(octet_length(data))::bigint FROM docsync.chunks", in: database)

    let administration = try HubAdministration(adminURL: try Self.adminURL(database))
    let total = try await administration.convertBlobs()
    #expect(total.converted == 14)
    #expect(total.damaged == 0)
    #expect(try await Self.count("SELECT count(*)::bigint FROM docsync.blobs", in: database) == 0)
    #expect(try await Self.count("SELECT count(*)::bigint FROM docsync.chunks", in: database) == 0)
    #expect(
      try await Self.count("SELECT count(*)::bigint FROM docsync.blob_twins", in: database) == 14)
    // 12 versions of 600 KB differing in 16 bytes each: about one version and a chunk each.
    let objectBytes = try await Self.count(
      "SELECT sum(octet_length(data))::bigint FROM docsync.objects", in: database)
    #expect(objectBytes * 4 < blobBytes, "\(blobBytes) bytes of blobs, \(objectBytes) of objects")
    try await Self.expectReadable(made.contents, x)
    try await Self.expectReadable(yMade.contents, y)

    // Idempotent.
    #expect(try await administration.convertBlobs().converted == 0)

    // Another account's twins are invisible: through the function, and the table is closed.
    #expect(try await y.blobRoots(made.contents.map { HubHash.sha256($0) }).isEmpty)
    try await PostgresTestCluster.withConnection(
      user: xDevice, password: "x-pw", database: database
    ) { connection in
      for sql in [
        "SELECT * FROM docsync.blob_twins",
        "DELETE FROM docsync.blob_twins",
        "INSERT INTO docsync.blob_twins (hash, root, reference) VALUES ('\\x01', '\\x01', '\\x01')",
        "SELECT * FROM docsync.twin_candidates('\\x', 10)",
        "SELECT docsync.install_twin('\\x01', gen_random_uuid(), '\\x01', '\\x01')",
        "SELECT docsync.drop_unnamed_twins(ARRAY['\\x01'::bytea])",
      ] {
        do {
          try await connection.query(
            PostgresQuery(unsafeSQL: sql), logger: PostgresTestCluster.logger)
          Issue.record("accepted: \(sql)")
        } catch let error as PSQLError {
          #expect(error.serverInfo?[.sqlState] == "42501", "\(sql): \(String(reflecting: error))")
        }
      }
      // A device that claims to act as another account is still itself.
      let yHash = HubHash.sha256(yMade.contents[0])
      let yAccount = try await y.withConnection { c in
        let rows = try await c.rows("SELECT docsync.current_account()::text")
        for name in try rows.decode(String.self) { return name }
        return ""
      }
      try await connection.query(
        "SELECT set_config('docsync.acting_account', \(yAccount), false)",
        logger: PostgresTestCluster.logger)
      let rows = try await connection.query(
        "SELECT count(*)::bigint FROM docsync.blob_roots(ARRAY[\(ByteBuffer(bytes: yHash))]::bytea[])",
        logger: PostgresTestCluster.logger)
      for try await seen in rows.decode(Int.self) { #expect(seen == 0) }
    }

    // Forget the first half: their twins go, and the objects only they had; the rest stay whole.
    let objects = try await Self.count("SELECT count(*)::bigint FROM docsync.objects", in: database)
    try await x.forget(records: made.records[0..<6].map(\.id))
    #expect(
      try await Self.count("SELECT count(*)::bigint FROM docsync.blob_twins", in: database) == 8)
    #expect(
      try await Self.count("SELECT count(*)::bigint FROM docsync.objects", in: database) < objects)
    try await Self.expectReadable(made.contents, x, skipping: Set(0..<6))
    try await Self.expectReadable(yMade.contents, y)
    try await x.forget(records: made.records[6...].map(\.id))
    try await y.forget(records: yMade.records.map(\.id))
    #expect(try await Self.count("SELECT count(*)::bigint FROM docsync.objects", in: database) == 0)
  }

  /// Prune after a conversion: the released versions' twins go, with the objects only they
  /// reached; the kept version reads whole.
  @Test func pruneAfterConversionDropsReleasedTwinsAndNothingElse() async throws {
    let (url, database) = try await PostgresTestCluster.freshHubURL()
    let hub = try PostgresHub(location: url)
    let letters = Array("abcdefghijklmnopqrstuvwxyz \n".utf8)
    var text = SQLiteBlobTwinTests.pseudoRandom(400_000, seed: 11).map {
      letters[Int($0) % letters.count]
    }
    var contents: [String] = []
    for index in 0..<5 {
      if index > 0 {
        for offset in 0..<16 { text[index * 70_001 + offset] = UInt8(ascii: "A") }
      }
      contents.append(String(decoding: text, as: UTF8.self))
    }
    let chain = try await versionChain(hub, contents)
    try await hub.append(chain.map(\.record))
    let administration = try HubAdministration(adminURL: try Self.adminURL(database))
    #expect(try await administration.convertBlobs().converted == 5)
    let objects = try await Self.count("SELECT count(*)::bigint FROM docsync.objects", in: database)
    // Staggered retention lets every version but the head go (they are an hour old).
    try await hub.prune(records: chain.map(\.record.id))
    #expect(try await allRecords(hub).map(\.blobs) == [[], [], [], [], [chain[4].blob]])
    #expect(
      try await Self.count("SELECT count(*)::bigint FROM docsync.blob_twins", in: database) == 1)
    #expect(try await hub.blobRoots(chain.map(\.blob)).keys.map { $0 } == [chain[4].blob])
    let left = try await Self.count("SELECT count(*)::bigint FROM docsync.objects", in: database)
    #expect(left < objects, "\(objects) objects before the prune, \(left) after")
    try await Self.expectReadable([Array(contents[4].utf8)], hub)
  }

  /// Stopped at each step of a blob's conversion, as a crash would stop it: every version is
  /// readable, each blob held once (blob or twin), and the next run goes on.
  /// (No step removes a file here: a blob's bytes are rows, gone with its twin's transaction.)
  @Test(arguments: [TwinStop.Step.beforeCutting, .beforeRecording])
  func aConversionStoppedAnywhereLosesNothing(_ step: TwinStop.Step) async throws {
    let (url, database) = try await PostgresTestCluster.freshHubURL()
    let hub = try PostgresHub(location: url)
    let made = try await Self.makeLibrary(hub, count: 4, size: 200_000)
    let administration = try HubAdministration(adminURL: try Self.adminURL(database))
    let stop = TwinStop()
    var stops = 0
    while try await Self.count("SELECT count(*)::bigint FROM docsync.blobs", in: database) > 0
      && stops < 10
    {
      stop.arm(step)
      await #expect(throws: HubError.self) {
        try await administration.convertBlobs(batchSize: 100, stop: stop)
      }
      stop.arm(nil)
      stops += 1
      try await Self.expectReadable(made.contents, hub)
      let held = try await Self.count(
        """
        SELECT ((SELECT count(*) FROM docsync.blob_twins)
          + (SELECT count(*) FROM docsync.blobs))::bigint
        """, in: database)
      #expect(held == 4)
      // One blob further, unstopped.
      _ = try await administration.convertBlobs(batchSize: 1)
    }
    #expect(stops >= 1)
    #expect(
      try await Self.count("SELECT count(*)::bigint FROM docsync.blob_twins", in: database) == 4)
    try await Self.expectReadable(made.contents, hub)
  }

  /// `docsync hub init` killed at random moments while it converts: after every kill, every
  /// version is readable and each blob is held once (blob or twin); the last run ends the work.
  @Test(.timeLimit(.minutes(10)))
  func hubInitKilledWhileConvertingLosesNothing() async throws {
    let docsync = try PostgresTestCluster.docsyncBinary()
    let (url, database) = try await PostgresTestCluster.freshHubURL()
    let hub = try PostgresHub(location: url)
    let made = try await Self.makeLibrary(hub, count: 30, size: 1 << 20)
    let adminURL = try Self.adminURL(database)
    func held() async throws -> Int {
      try await Self.count(
        """
        SELECT ((SELECT count(*) FROM docsync.blob_twins)
          + (SELECT count(*) FROM docsync.blobs))::bigint
        """, in: database)
    }
    var kills = 0
    for round in 0..<80 where kills < 20 {
      if try await Self.count("SELECT count(*)::bigint FROM docsync.blobs", in: database) == 0 {
        break
      }
      let pid = try spawnQuietly([docsync, "hub", "init", adminURL])
      usleep(UInt32(40_000 + (round * 7_919) % 150_000))
      var status: Int32 = 0
      if waitpid(pid, &status, WNOHANG) == 0 {
        kill(pid, SIGKILL)
        kills += 1
      }
      waitpid(pid, &status, 0)
      try await Self.expectReadable(made.contents, hub)
      #expect(try await held() == 30, "round \(round)")
    }
    #expect(kills >= 20)
    let pid = try spawnQuietly([docsync, "hub", "init", adminURL])
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    #expect(status == 0)
    #expect(
      try await Self.count("SELECT count(*)::bigint FROM docsync.blob_twins", in: database) == 30)
    #expect(try await Self.count("SELECT count(*)::bigint FROM docsync.blobs", in: database) == 0)
    try await Self.expectReadable(made.contents, hub)
  }
}
