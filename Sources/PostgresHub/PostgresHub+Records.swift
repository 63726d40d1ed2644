import Hub
import PostgresNIO

// Why a cursor never skips a record that commits late: see docsync.before_record_insert in
// Migrations/v0001_accounts_records_blobs.sql. Every insert into docsync.records takes its seq
// from the account's row in docsync.heads with an upsert, which holds that row's lock until the
// transaction ends. A writer that took seq N therefore commits or rolls back before any other
// writer of the account can take N + 1, so seq order is commit order and "seq > cursor" is safe.
// The price is that one account's appends are serialised. A rolled-back append leaves no gap:
// its increment of the head rolls back with it.
//
// Since seqs are one sequence per account, a lock per path would not do: two appends of
// different paths still take consecutive seqs, and the one with the lower seq must commit
// first. What can shrink is how long an append holds the lock: from step 11 on
// (v0011_append_holds_the_head_briefly.sql) a device checks ids, blobs and objects before it,
// then appends with one call and commits, so the lock is held for that call and one round
// trip (the COMMIT), not five.

extension PostgresHub {
  public func append(_ records: [HubRecord]) async throws(HubError) {
    if records.isEmpty { return }
    let (batch, payloads) = try Self.unique(records)
    if await connections.schemaVersion >= 11 {
      try await appendHoldingTheHeadBriefly(batch, payloads)
      return
    }
    // Three statements for the whole batch, where one record took three: a push of 10,000
    // small files was 30,000 round trips here.
    try await withTransaction { connection in
      // Take the head lock first, so that checking for known ids and inserting are one step
      // with respect to other writers of the account.
      try await connection.run("SELECT docsync.lock_head()")
      let fresh = try await Self.unknown(batch, payloads, connection)
      guard !fresh.isEmpty else { return }
      if let missing = try await self.firstMissingBlob(of: fresh, connection) {
        throw HubError.missingBlob(missing)
      }
      // Every hash named is a stored blob's, so 32 bytes: each record's hashes travel joined
      // (a bytea[][] must be rectangular) and are cut apart again here. Rows go in in the
      // batch's order, which is the order their seqs are given in.
      try await connection.run(
        """
        INSERT INTO docsync.records (id, payload, blobs)
        SELECT i, p, ARRAY(
            SELECT substring(b FROM k * 32 + 1 FOR 32)
            FROM generate_series(0, octet_length(b) / 32 - 1) AS k ORDER BY k)
        FROM unnest(\(fresh.map { ByteBuffer(bytes: $0.id) })::bytea[],
          \(fresh.map { ByteBuffer(bytes: $0.payload) })::bytea[],
          \(fresh.map { ByteBuffer(bytes: $0.blobs.flatMap { $0 }) })::bytea[])
          WITH ORDINALITY AS t (i, p, b, n)
        ORDER BY n
        """)
    }
  }

  /// Step 11's append: the checks first, outside any transaction, then
  /// `docsync.append_records`, which takes the head lock, looks again for ids another device
  /// appended since, and inserts the rest. It runs in a transaction of its own that the
  /// device commits at once (``withTransaction(answerWithin:_:)``, as every write does): the
  /// lock is held for the call and one round trip.
  private func appendHoldingTheHeadBriefly(_ batch: [HubRecord], _ payloads: [[UInt8]: [UInt8]])
    async throws(HubError)
  {
    let fresh = try await withConnection { connection in
      let fresh = try await Self.unknown(batch, payloads, connection)
      if !fresh.isEmpty, let missing = try await self.firstMissingBlob(of: fresh, connection) {
        throw HubError.missingBlob(missing)
      }
      return fresh
    }
    guard !fresh.isEmpty else { return }
    try await withTransaction { connection in
      do {
        try await connection.run(
          """
          SELECT docsync.append_records(\(fresh.map { ByteBuffer(bytes: $0.id) })::bytea[],
            \(fresh.map { ByteBuffer(bytes: $0.payload) })::bytea[],
            \(fresh.map { ByteBuffer(bytes: $0.blobs.flatMap { $0 }) })::bytea[])
          """)
      } catch let error as PSQLError {
        switch error.serverInfo?[.sqlState] {
        case "DS001":
          // Another device appended one of these ids with other bytes since the look above.
          let id = error.serverInfo?[.detail] ?? "?"
          throw HubError.integrity(
            "record \(id) is already in the hub with a different payload")
        case "23503":
          // A blob or object named went (pruned or forgotten) since the look above: say which.
          try await connection.run("ROLLBACK")
          if let missing = try await self.firstMissingBlob(of: fresh, connection) {
            throw HubError.missingBlob(missing)
          }
          throw error
        default:
          throw error
        }
      }
    }
  }

  /// The records of `batch` that the hub does not hold yet; one it holds with other bytes is
  /// refused, since ids are derived from content: that is a forgery or a bug on some device.
  static func unknown(
    _ batch: [HubRecord], _ payloads: [[UInt8]: [UInt8]], _ connection: PostgresConnection
  ) async throws -> [HubRecord] {
    let known = try await connection.rows(
      """
      SELECT id, payload FROM docsync.records
      WHERE account = docsync.current_account()
        AND id = ANY(\(batch.map { ByteBuffer(bytes: $0.id) })::bytea[])
      """)
    var stored: Set<[UInt8]> = []
    for (id, payload) in try known.decode((ByteBuffer, ByteBuffer).self) {
      let id = Array(id.readableBytesView)
      guard Array(payload.readableBytesView) == payloads[id] else { throw Self.forged(id) }
      stored.insert(id)
    }
    return batch.filter { !stored.contains($0.id) }
  }

  /// A blob or object hash that one of `records` names and the hub does not hold, if any.
  func firstMissingBlob(of records: [HubRecord], _ connection: PostgresConnection)
    async throws -> [UInt8]?
  {
    let named = Set(records.flatMap(\.blobs))
    if named.isEmpty { return nil }
    // A record names a blob, or the root object of content in chunks (ObjectStore).
    let keys = named.map { ByteBuffer(bytes: $0) }
    var found = try await Self.storedHashes(keys, connection)
    if found.count < named.count {
      found.formUnion(
        try await Self.storedObjectIDs(
          keys, throughFunctions: await readsObjectsThroughFunctions(), connection))
    }
    for record in records {
      if let missing = record.blobs.first(where: { !found.contains($0) }) { return missing }
    }
    return nil
  }

  /// `records` with each id once, and each id's payload; an id twice with other bytes is refused
  /// as a known id with other bytes is.
  static func unique(_ records: [HubRecord]) throws(HubError) -> (
    [HubRecord], [[UInt8]: [UInt8]]
  ) {
    var batch: [HubRecord] = []
    var payloads: [[UInt8]: [UInt8]] = [:]
    for record in records {
      if let payload = payloads[record.id] {
        guard payload == record.payload else { throw forged(record.id) }
        continue
      }
      payloads[record.id] = record.payload
      batch.append(record)
    }
    return (batch, payloads)
  }

  static func forged(_ id: [UInt8]) -> HubError {
    .integrity("record \(hexString(id)) is already in the hub with a different payload")
  }

  public func records(after cursor: HubCursor, limit: Int) async throws(HubError) -> HubPage {
    guard limit > 0 else { throw .failed("a page of records needs a positive limit, not \(limit)") }
    let after = try Self.sequence(of: cursor)
    return try await withConnection { connection in
      let rows = try await connection.rows(
        """
        SELECT seq, id, payload, blobs FROM docsync.records
        WHERE account = docsync.current_account() AND seq > \(after)
        ORDER BY seq LIMIT \(limit)
        """)
      var records: [HubRecord] = []
      var last = after
      for (seq, id, payload, blobs) in try rows.decode(
        (Int64, ByteBuffer, ByteBuffer, [ByteBuffer]).self)
      {
        records.append(
          HubRecord(
            id: Array(id.readableBytesView), payload: Array(payload.readableBytesView),
            blobs: blobs.map { Array($0.readableBytesView) }))
        last = seq
      }
      return HubPage(records: records, cursor: records.isEmpty ? cursor : Self.cursor(at: last))
    }
  }

  /// Waits for a notification on the account's channel, and looks at the records after each one
  /// and at least every ``pollInterval``: a notification sent while the listening connection was
  /// down is lost, and the look catches what it announced.
  public func waitForChanges(after cursor: HubCursor, timeout: Duration) async throws(HubError)
    -> Bool
  {
    let after = try Self.sequence(of: cursor)
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while true {
      // Read the generation before looking, so a notification in between is not missed.
      let seen = changes.generation
      if Task.isCancelled { return false }
      // The sync engine cancels this wait when a local change wins the race. The look itself
      // runs in a task of its own, which that cancellation does not reach: a connection or
      // query cut off by cancellation inside postgres-nio could leave the wait hanging. Only
      // the sleep below is cut short.
      let look = Task { () async -> Result<Bool, HubError> in
        do throws(HubError) {
          return .success(try await self.hasRecords(after: after))
        } catch {
          return .failure(error)
        }
      }
      if try await look.value.get() { return true }
      let left = clock.now.duration(to: deadline)
      if left <= .zero || Task.isCancelled { return false }
      await changes.wait(after: seen, timeout: min(Self.pollInterval, left))
    }
  }

  private func hasRecords(after seq: Int64) async throws(HubError) -> Bool {
    // The look an idle device makes every second: the first to find a dead connection.
    try await withConnection(answerWithin: answerWithin / 4) { connection in
      let rows = try await connection.rows(
        """
        SELECT EXISTS (SELECT 1 FROM docsync.records
          WHERE account = docsync.current_account() AND seq > \(seq))
        """)
      for exists in try rows.decode(Bool.self) { return exists }
      return false
    }
  }

  /// The cursor of a PostgreSQL hub is the decimal seq of the last record seen.
  static func sequence(of cursor: HubCursor) throws(HubError) -> Int64 {
    if cursor.serialized.isEmpty { return 0 }
    guard let seq = Int64(cursor.serialized), seq >= 0 else {
      throw .failed("\"\(cursor.serialized)\" is not a cursor of a PostgreSQL hub")
    }
    return seq
  }

  static func cursor(at seq: Int64) -> HubCursor {
    HubCursor(serialized: String(seq))
  }
}
