import DocumentModel
import Foundation
import Hub
import PostgresNIO
import Synchronization
import Testing

import func MountHarness.run

@testable import PostgresHub

@Suite("PostgresHub", .enabled(if: PostgresTestCluster.isEnabled))
struct PostgresHubTests {
  /// A writer that holds its transaction open with seq 1 must not let a reader pass it when a
  /// later writer commits: the later one waits for the head lock, so nothing commits past it.
  @Test func aCursorNeverSkipsARecordThatCommitsLate() async throws {
    let (database, device, url) = try await PostgresTestCluster.oneDevice(password: "pw")
    let reader = try PostgresHub(location: url)
    let writer = try PostgresHub(location: url)
    let early = makeRecord("early"), late = makeRecord("late")

    try await PostgresTestCluster.withConnection(user: device, password: "pw", database: database) {
      slow in
      // Raw SQL in a second connection: insert and keep the transaction open.
      try await slow.query("BEGIN", logger: PostgresTestCluster.logger)
      try await slow.query(
        """
        INSERT INTO docsync.records (id, payload, blobs)
        VALUES (\(ByteBuffer(bytes: early.id)), \(ByteBuffer(bytes: early.payload)), '{}')
        """, logger: PostgresTestCluster.logger)
      let lateAppend = Task { try await writer.append([late]) }
      try await Task.sleep(for: .milliseconds(300))
      // The late writer is waiting; a reader sees neither yet, and keeps its cursor.
      let during = try await reader.records(after: .start, limit: 10)
      #expect(during.records.isEmpty)
      #expect(during.cursor == .start)
      try await slow.query("COMMIT", logger: PostgresTestCluster.logger)
      try await lateAppend.value
    }
    let after = try await allRecords(reader)
    #expect(after == [early, late])
  }

  /// Step 11's append looks again under the lock, for ids another device appended after the
  /// caller looked: other bytes are refused (DS001), the same bytes are left as they are, and
  /// only the rest go in.
  @Test func appendRecordsLooksAgainUnderTheLock() async throws {
    let (database, device, url) = try await PostgresTestCluster.oneDevice(password: "pw")
    let hub = try PostgresHub(location: url)
    let first = makeRecord("first"), second = makeRecord("second")
    try await hub.append([first])
    try await PostgresTestCluster.withConnection(user: device, password: "pw", database: database) {
      connection in
      func append(_ records: [HubRecord]) async throws -> [Int64] {
        let rows = try await connection.query(
          """
          SELECT docsync.append_records(\(records.map { ByteBuffer(bytes: $0.id) })::bytea[],
            \(records.map { ByteBuffer(bytes: $0.payload) })::bytea[],
            \(records.map { _ in ByteBuffer() })::bytea[])
          """, logger: PostgresTestCluster.logger)
        var added: [Int64] = []
        for try await count in rows.decode(Int64.self) { added.append(count) }
        return added
      }
      var forged = first
      forged.payload = Array("other bytes".utf8)
      do {
        _ = try await append([second, forged])
        Issue.record("a record with another payload was appended")
      } catch let error as PSQLError {
        #expect(error.serverInfo?[.sqlState] == "DS001")
        #expect(error.serverInfo?[.detail] == hexString(first.id))
      }
      #expect(try await append([first, second]) == [1])
    }
    #expect(try await allRecords(hub) == [first, second])
  }

  /// A server that stops answering (here a lock holds every statement back; a network change
  /// that leaves the connection dead looks the same from here) is unreachable once the hub's
  /// limit has passed, and an idle device's look for changes gives up sooner; the hub answers
  /// again on a new connection once the server does. The expectations below bound the hub's
  /// waits; the time limit only catches a hang. It is not one minute: in a run of every hub
  /// test, which make their databases and accounts at the same time as this one, the whole
  /// test took 49 to 69 s (8 s alone), on main as well.
  @Test(.timeLimit(.minutes(3)))
  func aServerThatStopsAnsweringIsUnreachableWithinTheLimit() async throws {
    let (url, database) = try await PostgresTestCluster.freshHubURL()
    let hub = try PostgresHub(location: url, answerWithin: .seconds(4))
    // Connected, with the schema and the account checked: what waits below is the statement.
    _ = try await hub.records(after: .start, limit: 1)
    try await PostgresTestCluster.withAdminConnection(database: database) { admin in
      try await admin.query("BEGIN", logger: PostgresTestCluster.logger)
      try await admin.query(
        "LOCK TABLE docsync.records IN ACCESS EXCLUSIVE MODE", logger: PostgresTestCluster.logger)
      var start = ContinuousClock.now
      let error = await #expect(throws: HubError.self) {
        _ = try await hub.records(after: .start, limit: 10)
      }
      #expect(ContinuousClock.now - start >= .seconds(4))
      guard case .unreachable(let reason) = error else {
        Issue.record("\(String(describing: error))")
        return
      }
      #expect(reason.contains("no answer within 4"), "\(reason)")

      start = ContinuousClock.now
      await #expect(throws: HubError.self) {
        _ = try await hub.waitForChanges(after: .start, timeout: .seconds(30))
      }
      #expect(ContinuousClock.now - start < .seconds(30))
      try await admin.query("ROLLBACK", logger: PostgresTestCluster.logger)
    }
    let page = try await hub.records(after: .start, limit: 10)
    #expect(page.records.isEmpty)
  }

  /// Several hubs (each its own server sessions) and several psql processes append at once while
  /// a reader pages through: every record is seen exactly once.
  @Test func concurrentAppendersNeitherLoseNorDuplicate() async throws {
    let (url, _) = try await PostgresTestCluster.freshHubURL()
    let reader = try PostgresHub(location: url)
    let hubWriters = 4, psqlWriters = 2, perWriter = 60
    let done = Finished()
    let writers = Task {
      defer { done.set() }
      try await withThrowingTaskGroup(of: Void.self) { group in
        for writer in 0..<hubWriters {
          group.addTask {
            let hub = try PostgresHub(location: url)
            for batch in stride(from: 0, to: perWriter, by: 5) {
              let records = (batch..<batch + 5).map { index in
                HubRecord(
                  id: HubHash.sha256(Array("w\(writer) \(index)".utf8)),
                  payload: Array("w\(writer) \(index)".utf8))
              }
              try await hub.append(records)
            }
          }
        }
        for writer in 0..<psqlWriters {
          group.addTask {
            let sql = (0..<perWriter).map { index in
              "INSERT INTO docsync.records (id, payload, blobs) VALUES "
                + "(sha256('p\(writer) \(index)'::bytea), 'p\(writer) \(index)'::bytea, '{}');"
            }.joined(separator: "\n")
            try await runPsql(url: url, sql: sql)
          }
        }
        try await group.waitForAll()
      }
    }
    var seen: [HubRecord] = []
    var cursor = HubCursor.start
    var drained = false
    while true {
      let page = try await reader.records(after: cursor, limit: 7)
      if page.records.isEmpty {
        if drained { break }
        if done.value {
          drained = true
          continue
        }
        _ = try await reader.waitForChanges(after: cursor, timeout: .milliseconds(200))
        continue
      }
      seen += page.records
      cursor = page.cursor
    }
    try await writers.value
    let total = (hubWriters + psqlWriters) * perWriter
    #expect(seen.count == total)
    #expect(Set(seen.map(\.id)).count == total)
    #expect(try await allRecords(reader) == seen)
    print("postgres hub stress: \(total) records from \(hubWriters) hubs and \(psqlWriters) psql")
  }

  /// A device prunes only what the account's retention lets go: never a head, never a version
  /// younger than retention keeps, never another account's, and never with plain DELETE.
  @Test func pruningRemovesOnlyWhatRetentionLetsGo() async throws {
    let url = try await PostgresTestCluster.oneDevice(password: "p-pw").url
    let hub = try PostgresHub(location: url)
    let old = try await versionChain(hub, ["one", "two", "three"])
    let young = try await versionChain(hub, ["young one", "young two"], age: 0)
    try await hub.append((old + young).map(\.record))
    // Staggered (the default) lets nothing younger than 30 s go, and no head ever.
    try await hub.prune(records: (old + young).map(\.record.id))
    func named() async throws -> [[[UInt8]]] { try await allRecords(hub).map(\.blobs) }
    #expect(try await named() == [[], [], [old[2].blob], [young[0].blob], [young[1].blob]])
    #expect(try await !hub.hasBlob(hash: old[0].blob))
    await #expect(throws: HubError.self) { try await hub.setRetention("keep forever") }
    try await hub.setRetention("keep 0")
    try await hub.prune(records: young.map(\.record.id))
    #expect(try await named() == [[], [], [old[2].blob], [], [young[1].blob]])
    #expect(try await !hub.hasBlob(hash: young[0].blob))
    // Rows go only through docsync.prune_records.
    await #expect(throws: (any Error).self) {
      try await runPsql(url: url, sql: "DELETE FROM docsync.records")
    }
    #expect(try await allRecords(hub).count == 5)
  }

  /// A device forgets only within its own account (schema step 5): docsync.forget_records
  /// given another account's ids deletes nothing there, erasures are read only through
  /// docsync.erasures_after and only the caller's, and no device writes them by hand.
  @Test func forgettingReachesOnlyTheCallersAccount() async throws {
    let database = try await PostgresTestCluster.createDatabase()
    let xDevice = PostgresTestCluster.uniqueName("x")
    let xURL = try await PostgresTestCluster.createAccount(
      database: database, account: PostgresTestCluster.uniqueName("x"), device: xDevice,
      password: "x-pw")
    let yURL = try await PostgresTestCluster.createAccount(
      database: database, account: PostgresTestCluster.uniqueName("y"),
      device: PostgresTestCluster.uniqueName("y"), password: "y-pw")
    let yHub = try PostgresHub(location: yURL)
    let yBlob = try await putBlob(yHub, Array("y's secret".utf8))
    let yRecord = makeRecord("y's record", blobs: [yBlob])
    try await yHub.append([yRecord])
    let xHub = try PostgresHub(location: xURL)
    let xBlob = try await putBlob(xHub, Array("x's own".utf8))
    let xRecord = makeRecord("x's record", blobs: [xBlob])
    try await xHub.append([xRecord])
    // X aims its forget at Y's record and blob too: only its own go.
    try await xHub.forget(records: [yRecord.id, xRecord.id])
    #expect(try await allRecords(xHub).isEmpty)
    #expect(try await !xHub.hasBlob(hash: xBlob))
    #expect(try await allRecords(yHub) == [yRecord])
    #expect(try await fetchBlob(yHub, yBlob) == Array("y's secret".utf8))
    #expect(
      try await xHub.erasures(after: .start, limit: 10).erasures == [
        Erasure(id: xRecord.id, kind: .forgotten)
      ])
    #expect(try await yHub.erasures(after: .start, limit: 10).erasures.isEmpty)
    try await PostgresTestCluster.withConnection(
      user: xDevice, password: "x-pw", database: database
    ) { x in
      let refused = [
        "SELECT * FROM docsync.erasures",
        "INSERT INTO docsync.erasures (account, id, forgotten) VALUES (docsync.current_account(), '\\x01', true)",
        "UPDATE docsync.erasures SET forgotten = false",
        "DELETE FROM docsync.erasures",
        "DELETE FROM docsync.records",
        "DELETE FROM docsync.record_parents",
        // Step 6's blob dropper runs only inside prune_records and forget_records.
        "SELECT docsync.drop_unnamed_blobs(ARRAY['\\x01'::bytea])",
      ]
      for sql in refused {
        do {
          try await x.query(PostgresQuery(unsafeSQL: sql), logger: PostgresTestCluster.logger)
          Issue.record("accepted: \(sql)")
        } catch let error as PSQLError {
          let state = error.serverInfo?[.sqlState] ?? "none"
          #expect(state == "42501", "\(sql): \(String(reflecting: error))")
        }
      }
      // Y's erasures stay invisible through the function as well.
      let rows = try await x.query(
        "SELECT count(*) FROM docsync.erasures_after(0, 1000)",
        logger: PostgresTestCluster.logger)
      for try await count in rows.decode(Int.self) { #expect(count == 1) }
    }
    #expect(try await allRecords(yHub) == [yRecord])
  }

  /// Whatever SQL a role of account X sends, account Y's rows stay invisible and untouched.
  @Test func anotherAccountIsInvisibleAndUnwritable() async throws {
    let (database, xDevice, yAccount, xURL, yURL) = try await PostgresTestCluster.twoAccounts()
    let yHub = try PostgresHub(location: yURL)
    let yBlob = try await putBlob(yHub, Array("y's secret".utf8))
    try await yHub.append([makeRecord("y's record", blobs: [yBlob])])

    let xHub = try PostgresHub(location: xURL)
    #expect(try await allRecords(xHub).isEmpty)
    #expect(try await !xHub.hasBlob(hash: yBlob))
    // X cannot name Y's blob in a record of its own either.
    await #expect(throws: HubError.missingBlob(yBlob)) {
      try await xHub.append([makeRecord("x", blobs: [yBlob])])
    }

    let yRole = "docsync_account_\(yAccount)"
    // X has a record and a finished blob of its own, which its own attacks aim at too.
    let xBlob = try await putBlob(xHub, Array("x's own".utf8))
    try await xHub.append([makeRecord("x's record", blobs: [xBlob])])

    try await PostgresTestCluster.withConnection(
      user: xDevice, password: "x-pw", database: database
    ) { x in
      for table in ["records", "blobs", "chunks", "uploads", "heads"] {
        let rows = try await x.query(
          PostgresQuery(
            unsafeSQL:
              "SELECT count(*) FROM docsync.\(table) WHERE account <> docsync.current_account()"),
          logger: PostgresTestCluster.logger)
        for try await count in rows.decode(Int.self) { #expect(count == 0, "\(table)") }
      }
      // Each must be refused for lack of privilege: a grant, a policy or a check says no.
      let refused = [
        "UPDATE docsync.records SET payload = '\\x00'",
        "DELETE FROM docsync.records",
        "UPDATE docsync.blobs SET size = 0",
        "DELETE FROM docsync.blobs",
        "UPDATE docsync.heads SET seq = 0",
        "DELETE FROM docsync.heads",
        "INSERT INTO docsync.heads (account, seq) VALUES (docsync.current_account(), 0)",
        "INSERT INTO docsync.heads (account, seq) VALUES ('\(yRole)', 0)",
        "UPDATE docsync.chunks SET data = '\\x00'",
        "DELETE FROM docsync.chunks",
        "DELETE FROM docsync.uploads",
        "UPDATE docsync.uploads SET hash = '\\x00'",
        "TRUNCATE docsync.chunks",
        "INSERT INTO docsync.chunks (upload, index, hash, data) "
          + "SELECT upload, 99, sha256('\\x00'), '\\x00' FROM docsync.blobs",
        "INSERT INTO docsync.records (account, id, payload, blobs) VALUES ('\(yRole)', '\\x01', '\\x01', '{}')",
        "INSERT INTO docsync.blobs (account, hash, size, upload) SELECT '\(yRole)', '\\x01', 0, id FROM docsync.uploads",
        "INSERT INTO docsync.uploads (id, account, hash) VALUES (gen_random_uuid(), '\(yRole)', '\\x01')",
        "SELECT * FROM docsync.channels",
        "SET ROLE \(yRole)",
        "ALTER TABLE docsync.records DISABLE ROW LEVEL SECURITY",
        "ALTER FUNCTION docsync.current_account() OWNER TO CURRENT_USER",
        // Step 3: the wanted list is the hub's, and only the hub judges a blob.
        "INSERT INTO docsync.wanted (hash) SELECT hash FROM docsync.blobs",
        "DELETE FROM docsync.wanted",
        "UPDATE docsync.wanted SET hash = '\\x00'",
        "SELECT docsync.blob_is_damaged(upload, 0, hash) FROM docsync.blobs",
      ]
      for sql in refused {
        do {
          try await x.query(PostgresQuery(unsafeSQL: sql), logger: PostgresTestCluster.logger)
          Issue.record("accepted: \(sql)")
        } catch let error as PSQLError {
          let state = error.serverInfo?[.sqlState] ?? "none"
          // 42501: no privilege (a grant, a policy or a check); 23514: a malformed row.
          #expect(["42501", "23514"].contains(state), "\(sql): \(String(reflecting: error))")
        }
      }
      // Accepted, and change nothing: the cleanup function leaves finished uploads alone, and
      // the hub checks a reported blob itself: a good one, or another account's, stays.
      try await x.query(
        "SELECT docsync.discard_upload(upload) FROM docsync.blobs",
        logger: PostgresTestCluster.logger)
      for hash in [xBlob, yBlob] {
        let rows = try await x.query(
          "SELECT docsync.report_damaged_blob(\(ByteBuffer(bytes: hash)))",
          logger: PostgresTestCluster.logger)
        for try await condition in rows.decode(String.self) {
          #expect(condition == (hash == xBlob ? "intact" : "unknown"))
        }
      }
      // The device's normal work still passes on the same connection.
      try await x.query("BEGIN", logger: PostgresTestCluster.logger)
      try await x.query("SELECT docsync.lock_head()", logger: PostgresTestCluster.logger)
      let extra = makeRecord("x after the attacks")
      try await x.query(
        """
        INSERT INTO docsync.records (id, payload, blobs)
        VALUES (\(ByteBuffer(bytes: extra.id)), \(ByteBuffer(bytes: extra.payload)), '{}')
        """, logger: PostgresTestCluster.logger)
      try await x.query("COMMIT", logger: PostgresTestCluster.logger)
    }
    #expect(try await allRecords(yHub) == [makeRecord("y's record", blobs: [yBlob])])
    #expect(try await fetchBlob(yHub, yBlob) == Array("y's secret".utf8))
    #expect(
      try await allRecords(xHub) == [
        makeRecord("x's record", blobs: [xBlob]), makeRecord("x after the attacks"),
      ])
    #expect(try await fetchBlob(xHub, xBlob) == Array("x's own".utf8))
  }

  /// A device cannot name other bytes under a hash the hub wants (a blob it dropped as
  /// damaged), even bytes of the right size whose chunks match their own hashes: the hub
  /// checks the replacement against its key itself (schema step 3).
  @Test func aWantedBlobIsReplacedOnlyByItsOwnBytes() async throws {
    let (database, device, url) = try await PostgresTestCluster.oneDevice(password: "x-pw")
    let hub = try PostgresHub(location: url)
    let content = Array("the good content".utf8)
    let hash = try await putBlob(hub, content)
    try await hub.append([makeRecord("r", blobs: [hash])])
    try await postgresFixture(url: url, database: database).corruptBlob(hash)
    #expect(try await hub.reportDamagedBlob(hash: hash) == .wanted)

    let garbage = Array("THE GOOD CONTENT".utf8)
    try await PostgresTestCluster.withConnection(
      user: device, password: "x-pw", database: database
    ) { x in
      let upload = UUID()
      try await x.query(
        "INSERT INTO docsync.uploads (id, hash) VALUES (\(upload), \(ByteBuffer(bytes: hash)))",
        logger: PostgresTestCluster.logger)
      try await x.query(
        """
        INSERT INTO docsync.chunks (upload, index, hash, data) VALUES (\(upload), 0,
          \(ByteBuffer(bytes: HubHash.sha256(garbage))), \(ByteBuffer(bytes: garbage)))
        """, logger: PostgresTestCluster.logger)
      do {
        try await x.query(
          """
          INSERT INTO docsync.blobs (hash, size, upload)
          VALUES (\(ByteBuffer(bytes: hash)), \(Int64(garbage.count)), \(upload))
          """, logger: PostgresTestCluster.logger)
        Issue.record("other bytes were named under a wanted hash")
      } catch let error as PSQLError {
        #expect(error.serverInfo?[.sqlState] == "XX001", "\(String(reflecting: error))")
      }
    }
    #expect(try await !hub.hasBlob(hash: hash))
    #expect(try await hub.wantedBlobs() == [hash])
    _ = try await putBlob(hub, content)
    #expect(try await hub.wantedBlobs().isEmpty)
    #expect(try await fetchBlob(hub, hash) == content)
  }

  /// Every blob put first sweeps the account's abandoned uploads (`sweep_uploads`), and an
  /// upload row stays as long as its blob: read whole, the table was read once for each file
  /// of a push. Schema step 8 indexes it by account and start, so the sweep reads only the
  /// account's uploads older than a day, and still takes only those that no blob names.
  @Test func theSweepBeforeEachPutReadsOnlyOldUploadsByIndex() async throws {
    let (database, device, url) = try await PostgresTestCluster.oneDevice(password: "x-pw")
    let hub = try PostgresHub(location: url)
    let kept = try await putBlob(hub, Array("a finished upload, a day old".utf8))
    let logger = PostgresTestCluster.logger
    try await PostgresTestCluster.withConnection(
      user: device, password: "x-pw", database: database
    ) { x in
      // Recent uploads, as a library's finished ones are, and two abandoned a day ago.
      try await x.query(
        """
        INSERT INTO docsync.uploads (id, hash)
        SELECT gen_random_uuid(), '\\x00'::bytea FROM generate_series(1, 5000)
        """, logger: logger)
      try await x.query(
        """
        INSERT INTO docsync.uploads (id, hash, started)
        SELECT gen_random_uuid(), '\\x01'::bytea, now() - interval '2 days'
        FROM generate_series(1, 2)
        """, logger: logger)
    }
    try await PostgresTestCluster.withAdminConnection(database: database) { admin in
      try await admin.query(
        """
        UPDATE docsync.uploads SET started = now() - interval '2 days'
        WHERE id = (SELECT upload FROM docsync.blobs WHERE hash = \(ByteBuffer(bytes: kept)))
        """, logger: logger)
      try await admin.query("ANALYZE docsync.uploads", logger: logger)
    }
    let (swept, sequential, indexed) = try await PostgresTestCluster.withConnection(
      user: device, password: "x-pw", database: database
    ) { x -> (Int, Int, Int) in
      try await x.query("BEGIN", logger: logger)
      var swept = -1
      for try await count in try await x.query("SELECT docsync.sweep_uploads()", logger: logger)
        .decode(Int.self)
      {
        swept = count
      }
      // This transaction's scans of the table, the sweep's among them.
      var scans = (-1, -1)
      for try await row in try await x.query(
        """
        SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables
        WHERE relid = 'docsync.uploads'::regclass
        """, logger: logger
      ).decode((Int, Int).self) {
        scans = row
      }
      try await x.query("COMMIT", logger: logger)
      return (swept, scans.0, scans.1)
    }
    #expect(swept == 2, "the two abandoned uploads go; the finished one stays")
    #expect(sequential == 0, "the sweep read the whole uploads table")
    #expect(indexed >= 1)
    #expect(try await fetchBlob(hub, kept) == Array("a finished upload, a day old".utf8))
  }

  /// The sweep runs at a hub's first put, then every few minutes, not before every blob: even
  /// by index it reads each upload of the account older than a day.
  @Test func aHubSweepsAbandonedUploadsAtItsFirstPutNotAtEach() async throws {
    let (database, device, url) = try await PostgresTestCluster.oneDevice(password: "x-pw")
    let logger = PostgresTestCluster.logger
    // Abandons an upload two days ago; returns how many abandoned uploads there are.
    func abandonOne() async throws -> Int {
      try await PostgresTestCluster.withConnection(
        user: device, password: "x-pw", database: database
      ) { x -> Int in
        try await x.query(
          """
          INSERT INTO docsync.uploads (id, hash, started)
          VALUES (gen_random_uuid(), '\\x01'::bytea, now() - interval '2 days')
          """, logger: logger)
        return try await abandoned(x)
      }
    }
    func abandoned(_ x: PostgresConnection) async throws -> Int {
      let rows = try await x.query(
        "SELECT count(*)::int8 FROM docsync.uploads WHERE hash = '\\x01'::bytea", logger: logger)
      for try await count in rows.decode(Int.self) { return count }
      return -1
    }
    func abandonedNow() async throws -> Int {
      try await PostgresTestCluster.withConnection(
        user: device, password: "x-pw", database: database
      ) { try await abandoned($0) }
    }
    let hub = try PostgresHub(location: url)
    #expect(try await abandonOne() == 1)
    _ = try await putBlob(hub, Array("first put".utf8))
    #expect(try await abandonedNow() == 0, "the first put sweeps")
    #expect(try await abandonOne() == 1)
    _ = try await putBlob(hub, Array("second put".utf8))
    #expect(try await abandonedNow() == 1, "the next put, a moment later, does not")
    _ = try await putBlob(try PostgresHub(location: url), Array("another hub's first put".utf8))
    #expect(try await abandonedNow() == 0)
  }

  /// A role of another account cannot learn when an account writes: the account's channel is a
  /// secret of the account, and the account role's name (public in pg_roles) carries nothing.
  @Test func anotherAccountCannotListenToItsWrites() async throws {
    let (database, xDevice, yAccount, _, yURL) = try await PostgresTestCluster.twoAccounts()
    let yHub = try PostgresHub(location: yURL)
    try await yHub.append([makeRecord("first")])  // makes Y's channel
    let yChannel = try await PostgresTestCluster.withAdminConnection(database: database) {
      admin -> String in
      let rows = try await admin.query(
        "SELECT channel FROM docsync.channels WHERE account = \("docsync_account_\(yAccount)")",
        logger: PostgresTestCluster.logger)
      for try await channel in rows.decode(String.self) { return channel }
      throw ClusterMissing()
    }
    let heard = Heard()
    let admin = try PostgresTestCluster.admin
    let listeners = [
      ("docsync_account_\(yAccount)", xDevice, "x-pw", "x on y's role"),
      (yChannel, admin.user, admin.password ?? "", "control"),
    ].map { channel, user, password, name in
      Task {
        try await PostgresTestCluster.withConnection(
          user: user, password: password, database: database
        ) { connection in
          try await connection.listen(on: channel) { notifications in
            for try await _ in notifications { heard.add(name) }
          }
        }
      }
    }
    try await Task.sleep(for: .milliseconds(500))
    try await yHub.append([makeRecord("second")])
    try await Task.sleep(for: .milliseconds(1500))
    listeners.forEach { $0.cancel() }
    // The control proves a write was announced; only on the secret channel.
    #expect(heard.names == ["control"])
  }

  /// A hub made with the schema of step 1, holding a record and a blob, as the code before
  /// step 2 wrote them: a device cannot upgrade it and says who can; once an administrator
  /// has (`docsync hub add-device`), the device reads everything and writes on, and a new device
  /// of the account gets all of it.
  @Test func aHubOfStepOneIsUpgradedByAnAdministratorAndKeepsItsData() async throws {
    let database = try await PostgresTestCluster.createDatabase()
    let account = PostgresTestCluster.uniqueName("old")
    let device = PostgresTestCluster.uniqueName("olddev")
    let admin = try PostgresTestCluster.admin
    let server = "\(admin.host):\(admin.port)/\(database)"
    let adminURL = "postgres://\(admin.user):\(admin.password ?? "")@\(server)"
    let stepOne = PostgresTestCluster.repositoryRoot.appendingPathComponent(
      "Sources/PostgresHub/Migrations/v0001_accounts_records_blobs.sql"
    ).path
    try await runPsql(
      url: adminURL,
      sql: """
        SET client_min_messages = warning;
        CREATE SCHEMA docsync;
        CREATE TABLE docsync.migrations (
          version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now());
        \\i \(stepOne)
        INSERT INTO docsync.migrations (version, name) VALUES (1, 'v0001_accounts_records_blobs');
        CREATE ROLE docsync_account_\(account) NOLOGIN;
        CREATE ROLE \(device) LOGIN PASSWORD 'old-pw';
        GRANT docsync_account_\(account) TO \(device);
        """)
    let content = Array("written before the upgrade".utf8)
    let blob = HubHash.sha256(content)
    let old = makeRecord("before the upgrade", blobs: [blob])
    let upload = UUID().uuidString.lowercased()
    func bytea(_ bytes: [UInt8]) -> String { "'\\x\(hexString(bytes))'::bytea" }
    let deviceURL = "postgres://\(device):old-pw@\(server)?sslmode=disable"
    // What step 1's devices sent: an upload, its chunk, the blob, then the record under the
    // head lock taken by an upsert that step 2 no longer allows.
    try await runPsql(
      url: deviceURL,
      sql: """
        INSERT INTO docsync.uploads (id, hash) VALUES ('\(upload)', \(bytea(blob)));
        INSERT INTO docsync.chunks (upload, index, hash, data)
          VALUES ('\(upload)', 0, sha256(\(bytea(content))), \(bytea(content)));
        INSERT INTO docsync.blobs (hash, size, upload)
          VALUES (\(bytea(blob)), \(content.count), '\(upload)');
        BEGIN;
        INSERT INTO docsync.heads AS h (seq) VALUES (0)
          ON CONFLICT (account) DO UPDATE SET seq = h.seq RETURNING seq;
        INSERT INTO docsync.records (id, payload, blobs)
          VALUES (\(bytea(old.id)), \(bytea(old.payload)), ARRAY[\(bytea(blob))]);
        COMMIT;
        """)

    let before = try PostgresHub(location: deviceURL)
    let refusal = await #expect(throws: HubError.self) { _ = try await allRecords(before) }
    guard case .invalidLocation(let reason) = refusal else {
      Issue.record("\(String(describing: refusal))")
      return
    }
    #expect(reason.contains("an administrator upgrades it"), "\(reason)")

    // The administrator's documented way applies the missing step (and sets the password).
    _ = try await PostgresTestCluster.createAccount(
      database: database, account: account, device: device, password: "old-pw")
    let after = try PostgresHub(location: deviceURL)
    #expect(try await allRecords(after) == [old])
    #expect(try await fetchBlob(after, blob) == content)
    try await after.append([makeRecord("after the upgrade")])
    let newcomer = try PostgresHub(
      location: try await PostgresTestCluster.createAccount(
        database: database, account: account, device: PostgresTestCluster.uniqueName("new"),
        password: "new-pw"))
    #expect(try await allRecords(newcomer) == [old, makeRecord("after the upgrade")])
    #expect(try await fetchBlob(newcomer, blob) == content)
  }

  /// A server (or someone on the path) that asks for the password in cleartext on a
  /// connection without TLS never gets it: the hub refuses in one line.
  @Test(arguments: ["disable", "allow", "prefer"])
  func aCleartextPasswordRequestWithoutTLSIsRefused(_ mode: String) async throws {
    let server = try CleartextServer()
    let hub = try PostgresHub(
      location: "postgres://me:the-secret@127.0.0.1:\(server.port)/db?sslmode=\(mode)")
    let error = await #expect(throws: HubError.self) { _ = try await hub.hasBlob(hash: [1]) }
    expectCleartextRefused(error, by: server)
  }

  /// A first attempt at TLS that the network cuts short shows nothing about the server: the
  /// hub reports it as unreachable and sends no password, and the next attempt, which learns
  /// that the server has no TLS, refuses its cleartext request as above.
  @Test(arguments: ["allow", "prefer"])
  func aTLSAttemptCutShortSendsNoPassword(_ mode: String) async throws {
    let server = try CleartextServer(dropping: 1)
    let hub = try PostgresHub(
      location: "postgres://me:the-secret@127.0.0.1:\(server.port)/db?sslmode=\(mode)")
    let first = await #expect(throws: HubError.self) { _ = try await hub.hasBlob(hash: [1]) }
    #expect(!server.passwords.contains("the-secret"), "\(server.passwords)")
    if case .unreachable = first {} else { Issue.record("\(String(describing: first))") }
    let second = await #expect(throws: HubError.self) { _ = try await hub.hasBlob(hash: [1]) }
    expectCleartextRefused(second, by: server)
  }

  /// The administrator's password, which may create roles, is guarded as a device's is.
  @Test func theAdministratorsPasswordIsNotSentInCleartext() async throws {
    let server = try CleartextServer()
    let administration = try HubAdministration(
      adminURL: "postgres://admin:the-secret@127.0.0.1:\(server.port)/db?sslmode=disable")
    let error = await #expect(throws: HubError.self) { try await administration.initialize() }
    expectCleartextRefused(error, by: server)
  }

  /// `error` is the one-line refusal of a cleartext request, and `server` never got the
  /// password.
  private func expectCleartextRefused(
    _ error: HubError?, by server: CleartextServer,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    if case .invalidLocation(let reason) = error {
      #expect(
        reason.contains("cleartext") && !reason.contains("\n"), "\(reason)",
        sourceLocation: sourceLocation)
    } else {
      Issue.record("\(String(describing: error))", sourceLocation: sourceLocation)
    }
    #expect(
      !server.passwords.contains("the-secret"), "\(server.passwords)",
      sourceLocation: sourceLocation)
  }

  /// With `prefer` and `allow`, a server that offers TLS gets every connection over it.
  @Test(arguments: ["allow", "prefer"])
  func aServerThatOffersTLSIsUsedOverTLS(_ mode: String) async throws {
    let (database, device, url) = try await PostgresTestCluster.oneDevice(password: "pw")
    let hub = try PostgresHub(
      location: url.replacingOccurrences(of: "sslmode=disable", with: "sslmode=\(mode)"))
    try await hub.append([makeRecord("over TLS")])
    #expect(try await allRecords(hub) == [makeRecord("over TLS")])
    let connections = try await PostgresTestCluster.withAdminConnection(database: database) {
      connection in
      let rows = try await connection.query(
        """
        SELECT s.ssl FROM pg_stat_ssl AS s JOIN pg_stat_activity AS a USING (pid)
        WHERE a.usename = \(device)
        """, logger: PostgresTestCluster.logger)
      var encrypted: [Bool] = []
      for try await ssl in rows.decode(Bool.self) { encrypted.append(ssl) }
      return encrypted
    }
    #expect(!connections.isEmpty && connections.allSatisfy { $0 }, "\(connections)")
  }

  /// Without sslmode the hub insists on TLS with a certificate it can verify, as
  /// sslmode=verify-full does; weaker modes must be written, and disable across a network
  /// draws a warning.
  @Test func withoutSslmodeTheServerMustProveWhoItIs() async throws {
    let none = try PostgresLocation(parsing: "postgres://me@db.example/db", environment: [:])
    #expect(none.sslMode == .verifyFull)
    #expect(none.warning == nil)
    let clear = try PostgresLocation(
      parsing: "postgres://me@db.example/db?sslmode=disable", environment: [:])
    #expect(clear.warning?.contains("unencrypted") == true)
    #expect(
      try PostgresLocation(parsing: "postgres://me@127.0.0.1/db?sslmode=disable", environment: [:])
        .warning == nil)

    let ca = try #require(PostgresTestCluster.certificateAuthority)
    // A server that offers no TLS: one line that names sslmode.
    let plain = try NoTLSServer()
    let hub = try PostgresHub(
      location: "postgres://me:pw@127.0.0.1:\(plain.port)/db?sslrootcert=\(ca)")
    let error = await #expect(throws: HubError.self) { try await hub.append([makeRecord("a")]) }
    guard case .invalidLocation(let reason) = error else {
      Issue.record("\(String(describing: error))")
      return
    }
    #expect(reason.contains("sslmode") && !reason.contains("\n"), "\(reason)")
    // No CA to verify with: refused before connecting, as libpq does.
    let home = FileManager.default.homeDirectoryForCurrentUser.path
    if !FileManager.default.fileExists(atPath: home + "/.postgresql/root.crt") {
      #expect(throws: HubError.self) { try PostgresHub(location: "postgres://me@127.0.0.1/db") }
    }
    // The test cluster's server, with the CA that signed its certificate, needs nothing more.
    let (url, _) = try await PostgresTestCluster.freshHubURL()
    let verified = try PostgresHub(
      location: url.replacingOccurrences(of: "?sslmode=disable", with: "?sslrootcert=\(ca)"))
    try await verified.append([makeRecord("verified")])
    #expect(try await allRecords(verified) == [makeRecord("verified")])
  }

  /// A hub an administrator has not upgraded past the last step devices need still syncs; one
  /// below it is refused in one line that says what to do.
  @Test func aDeviceWorksOnAHubMissingOnlyTheStepsThatSpeedItUp() async throws {
    let (url, database) = try await PostgresTestCluster.freshHubURL()
    try await PostgresTestCluster.adminQuery(
      "DROP INDEX docsync.uploads_account_started", database: database)
    try await PostgresTestCluster.adminQuery(
      "DELETE FROM docsync.migrations WHERE version > \(Migrations.required)", database: database)
    let hub = try PostgresHub(location: url)
    try await hub.append([makeRecord("works")])
    #expect(try await allRecords(hub) == [makeRecord("works")])
    let steps = try await PostgresTestCluster.withAdminConnection(database: database) {
      connection in
      try await Migrations.appliedVersion(connection)
    }
    #expect(steps == Migrations.required, "a device role changed the schema")

    try await PostgresTestCluster.adminQuery(
      "DELETE FROM docsync.migrations WHERE version = \(Migrations.required)", database: database)
    let older = try PostgresHub(location: url)
    let error = await #expect(throws: HubError.self) { try await older.append([makeRecord("no")]) }
    guard case .invalidLocation(let reason) = error else {
      Issue.record("\(String(describing: error))")
      return
    }
    #expect(
      reason.contains("docsync hub init ADMIN-URL") && !reason.contains("\n"), "\(reason)")
  }

  /// `docsync hub`: the administrator's commands, as README shows them.
  @Test func theAdministratorsCommandsEndToEnd() async throws {
    let database = try await PostgresTestCluster.createDatabase()
    let admin = try PostgresTestCluster.admin
    let ca = try #require(PostgresTestCluster.certificateAuthority)
    let adminURL =
      "postgres://\(admin.user):\(admin.password ?? "")@\(admin.host):\(admin.port)/\(database)"
      + "?sslrootcert=\(ca)"
    func docsync(_ arguments: [String], password: String? = nil) throws -> (Int32, String, String) {
      let result = try run(
        [try PostgresTestCluster.docsyncBinary()] + arguments,
        env: password.map { ["DOCSYNC_DEVICE_PASSWORD": $0] } ?? [:])
      return (result.status, result.stdout, result.stderr)
    }
    let account = PostgresTestCluster.uniqueName("adm")
    let (laptop, desktop) = (
      PostgresTestCluster.uniqueName("laptop"), PostgresTestCluster.uniqueName("desktop")
    )
    #expect(
      try docsync(["hub", "init", adminURL]).1
        == "the hub's schema is at step \(Migrations.steps.last!.version)\n"
        + "0 blob(s) converted into chunks\n")
    for role in [laptop, desktop] {
      let (status, _, stderr) = try docsync(
        ["hub", "add-device", adminURL, account, role], password: "pw-\(role)")
      #expect(status == 0, "\(stderr)")
    }
    let hub = try PostgresHub(
      location: "postgres://\(laptop):pw-\(laptop)@\(admin.host):\(admin.port)/\(database)"
        + "?sslrootcert=\(ca)")
    try await hub.append([makeRecord("one")])
    let listed = try docsync(["hub", "accounts", adminURL, "--json"]).1
    let accounts = try JSONDecoder().decode(
      [HubAdministration.Account].self, from: Data(listed.utf8))
    #expect(
      accounts.filter { $0.name == account }
        == [
          HubAdministration.Account(name: account, devices: [desktop, laptop].sorted(), records: 1)
        ])

    #expect(try docsync(["hub", "remove-device", adminURL, desktop]).0 == 0)
    let gone = try PostgresHub(
      location: "postgres://\(desktop):pw-\(desktop)@\(admin.host):\(admin.port)/\(database)"
        + "?sslrootcert=\(ca)")
    await #expect(throws: HubError.self) { _ = try await gone.hasBlob(hash: [1]) }

    // Mistakes are one line and change nothing; no password, no terminal: asked for, refused.
    for (arguments, password) in [
      (["hub", "add-device", adminURL, "Not-An-Account", "role_x"], "pw"),
      (["hub", "add-device", adminURL, account, "docsync_account_\(account)"], "pw"),
      (["hub", "add-device", adminURL, account, "role_x"], nil),
      (["hub", "remove-device", adminURL, admin.user], nil),
    ] as [([String], String?)] {
      let (status, _, stderr) = try docsync(arguments, password: password)
      #expect(status == 1, "\(arguments): \(stderr)")
      #expect(stderr.hasPrefix("docsync: ") && stderr.filter { $0 == "\n" }.count == 1, "\(stderr)")
    }
  }

  @Test func badLocationsAreRefusedInOneLine() throws {
    for location in [
      "postgres://", "postgres://host/db", "postgres://me@/db",
      "postgres://me@host/db?sslmode=sometimes", "postgres://me@host/db?colour=blue",
      "postgres://me@host:99999/db",
    ] {
      #expect(throws: HubError.self, "\(location)") { try PostgresHub(location: location) }
      do {
        _ = try PostgresHub(location: location)
      } catch {
        guard case .invalidLocation(let reason) = error else {
          Issue.record("\(location): \(error)")
          continue
        }
        #expect(!reason.contains("\n"))
      }
    }
  }

  @Test func passwordsComeFromTheURLTheEnvironmentOrThePasswordFile() throws {
    let folder = try ScratchFolder()
    let file = folder.path + "/pgpass"
    try "# comment\nother:5432:*:me:nope\n127.0.0.1:5433:*:me:from\\:file\n".write(
      toFile: file, atomically: true, encoding: .utf8)
    chmod(file, 0o600)
    let base = "postgres://me@127.0.0.1:5433/db"
    #expect(
      try PostgresLocation(parsing: base, environment: ["PGPASSFILE": file]).password == "from:file"
    )
    #expect(
      try PostgresLocation(parsing: base, environment: ["PGPASSFILE": file, "PGPASSWORD": "env"])
        .password == "env")
    #expect(
      try PostgresLocation(
        parsing: "postgres://me:url@127.0.0.1:5433/db", environment: ["PGPASSWORD": "env"]
      )
      .password == "url")
    chmod(file, 0o644)  // readable by others: libpq ignores it, and so do we
    #expect(try PostgresLocation(parsing: base, environment: ["PGPASSFILE": file]).password == nil)
  }

  @Test func anUnreachableHostIsOneClearLine() async throws {
    // A port nothing listens on: connect refused at once.
    let port = try unusedPort()
    let hub = try PostgresHub(location: "postgres://me:pw@127.0.0.1:\(port)/db?sslmode=disable")
    let error = await #expect(throws: HubError.self) { try await hub.append([makeRecord("a")]) }
    guard case .unreachable(let reason) = error else {
      Issue.record("\(String(describing: error))")
      return
    }
    #expect(!reason.contains("\n") && reason.contains("127.0.0.1"))
    print("unreachable: \(error!)")
  }

  @Test func aWrongPasswordIsOneClearLine() async throws {
    let (url, _) = try await PostgresTestCluster.freshHubURL()
    let wrong = url.replacingOccurrences(of: ":device-secret@", with: ":not-it@")
    let error = await #expect(throws: HubError.self) {
      _ = try await PostgresHub(location: wrong).hasBlob(hash: [1])
    }
    guard case .invalidLocation(let reason) = error else {
      Issue.record("\(String(describing: error))")
      return
    }
    #expect(!reason.contains("\n") && reason.contains("password authentication failed"))
    print("wrong password: \(error!)")
  }

  @Test func sslRequireAgainstAServerWithoutTLSIsOneClearLine() async throws {
    // What a server with ssl=off does: answer the SSLRequest with 'N'.
    let server = try NoTLSServer()
    let hub = try PostgresHub(
      location: "postgres://me:pw@127.0.0.1:\(server.port)/db?sslmode=require")
    let error = await #expect(throws: HubError.self) { try await hub.append([makeRecord("a")]) }
    guard case .invalidLocation(let reason) = error else {
      Issue.record("\(String(describing: error))")
      return
    }
    #expect(!reason.contains("\n") && reason.contains("TLS"))
    print("no TLS: \(error!)")
  }

  @Test(arguments: ["require", "verify-ca", "verify-full"])
  func tlsWorksAgainstTheTestServer(_ mode: String) async throws {
    let ca = try #require(PostgresTestCluster.certificateAuthority)
    let (url, _) = try await PostgresTestCluster.freshHubURL()
    let tlsURL =
      url.replacingOccurrences(of: "sslmode=disable", with: "sslmode=\(mode)")
      + "&sslrootcert=\(ca)"
    let hub = try PostgresHub(location: tlsURL)
    try await hub.append([makeRecord("over TLS")])
    #expect(try await allRecords(hub) == [makeRecord("over TLS")])
  }

  @Test func verifyFullRefusesACertificateFromAnotherCA() async throws {
    let (url, _) = try await PostgresTestCluster.freshHubURL()
    let folder = try ScratchFolder()
    // A CA that did not sign the server's certificate.
    let made = try run([
      "/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
      "-subj", "/CN=other", "-keyout", folder.path + "/other.key", "-out",
      folder.path + "/other.crt",
    ])
    try #require(made.status == 0, "\(made)")
    let tlsURL =
      url.replacingOccurrences(of: "sslmode=disable", with: "sslmode=verify-full")
      + "&sslrootcert=\(folder.path)/other.crt"
    let error = await #expect(throws: HubError.self) {
      try await PostgresHub(location: tlsURL).append([makeRecord("a")])
    }
    guard case .invalidLocation(let reason) = error else {
      Issue.record("\(String(describing: error))")
      return
    }
    #expect(!reason.contains("\n"))
    print("untrusted certificate: \(error!)")
  }

  @Test func openAnyHubIsNotNeededForTheProtocol() throws {
    // The Hub module still refuses postgres:// on its own: the docsync executable routes it here.
    expectInvalidLocation("postgres://me@localhost/db", mentioning: "not available yet")
  }
}

/// Runs `sql` through psql, waited for off the shared threads (``offThePool(_:)``).
func runPsql(url: String, sql: String) async throws {
  let result = try await offThePool {
    try run(["/usr/bin/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url], stdin: sql)
  }
  guard result.status == 0 else {
    throw AccountFailed(output: "psql: " + result.stdout + result.stderr)
  }
}

func unusedPort() throws -> Int {
  let server = try NoTLSServer()
  return server.port  // shut down when it goes away; nothing listens there afterwards
}

/// A loopback listener that answers a PostgreSQL SSLRequest with 'N', as a server without TLS.
final class NoTLSServer: Sendable {
  private let listener: LoopbackListener

  var port: Int { listener.port }

  init() throws {
    listener = try LoopbackListener { client in
      var request = [UInt8](repeating: 0, count: 8)
      _ = read(client, &request, 8)
      _ = write(client, "N", 1)
      var rest = [UInt8](repeating: 0, count: 512)
      _ = read(client, &rest, 512)
    }
  }
}
