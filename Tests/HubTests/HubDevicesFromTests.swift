import Foundation
import GRDB
import Testing

@testable import Hub
@testable import PostgresHub

/// A hub that a newer docsync changed in a way this one cannot use says so in one line, on both
/// hubs, both to a device that opens it and to one that was using it when it changed; a newer
/// hub that older devices can live with keeps working for them.
@Suite("Hub devices from")
struct HubDevicesFromTests {
  /// The line a device gives, whichever hub: what to do, and nothing else.
  private func expectNeedsNewer(
    _ error: HubError?, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    guard case .needsNewerDocsync = error else {
      Issue.record(
        "want needsNewerDocsync, got \(String(describing: error))", sourceLocation: sourceLocation)
      return
    }
    let line = error?.description ?? ""
    #expect(
      line.hasPrefix("this hub needs a newer docsync (")
        && line.hasSuffix(
          "): upgrade docsync on this device")
        && !line.contains("\n"), "\(line)",
      sourceLocation: sourceLocation)
  }

  @Test func aSQLiteHubFileThatNeedsANewerDocsyncIsRefused() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let running = try SQLiteHub(path: path)
    try await running.append([makeRecord("before")])
    func set(_ value: String) async throws {
      try await running.pool.write { db in
        try db.execute(
          sql: "INSERT OR REPLACE INTO settings (key, value) VALUES ('devices_from', ?)",
          arguments: [value])
      }
    }
    // The format this docsync reads, declared: nothing changes.
    try await set("\(SQLiteHub.format)")
    #expect(try await allRecords(try SQLiteHub(path: path)) == [makeRecord("before")])

    try await set("\(SQLiteHub.format + 1)")
    // It still opens, so that a mount set up before serves its files; nothing goes through it.
    let reopened = try SQLiteHub(path: path)
    expectNeedsNewer(await #expect(throws: HubError.self) { try await allRecords(reopened) })
    expectNeedsNewer(
      await #expect(throws: HubError.self) { try await reopened.append([makeRecord("no")]) })
    expectNeedsNewer(
      await #expect(throws: HubError.self) {
        try await reopened.missingObjects([[UInt8](repeating: 7, count: 32)])
      })
    // A mount that was running when another device's newer docsync changed the file stops at
    // its next page of records, before it reads anything it would not understand.
    expectNeedsNewer(await #expect(throws: HubError.self) { try await allRecords(running) })
    // Not a number: a format this docsync cannot know either.
    try await set("2a")
    expectNeedsNewer(await #expect(throws: HubError.self) { try await allRecords(reopened) })
    // The file itself is left as it was for the newer docsync.
    try await set("\(SQLiteHub.format)")
    #expect(try await allRecords(running) == [makeRecord("before")])
    #expect(try await allRecords(reopened) == [makeRecord("before")])
  }

  @Test(.enabled(if: PostgresTestCluster.isEnabled))
  func aPostgresHubThatNeedsANewerDocsyncIsRefused() async throws {
    let (url, database) = try await PostgresTestCluster.freshHubURL()
    let running = try PostgresHub(location: url)
    try await running.append([makeRecord("before")])
    let next = Migrations.steps.last!.version + 1
    func admin(_ sql: String) async throws {
      try await PostgresTestCluster.adminQuery(sql, database: database)
    }

    // A newer step that older devices can live with (an index, say): they keep working.
    try await admin(
      "INSERT INTO docsync.migrations (version, name) VALUES (\(next), 'v\(next)_compatible')")
    let second = try PostgresHub(location: url)
    try await second.append([makeRecord("second")])
    #expect(try await allRecords(second) == [makeRecord("before"), makeRecord("second")])

    // One they cannot: a device that opens the hub refuses before any query of its own.
    try await admin("UPDATE docsync.migrations SET devices_from = \(next) WHERE version = \(next)")
    let third = try PostgresHub(location: url)
    expectNeedsNewer(await #expect(throws: HubError.self) { try await allRecords(third) })
    // So does the administrator's older docsync: it must not apply or report steps over it.
    let adminError = await #expect(throws: HubError.self) {
      try await PostgresTestCluster.withAdminConnection(database: database) { connection in
        try await Migrations.run(on: connection)
      }
    }
    expectNeedsNewer(adminError)

    // A device that was running when the administrator upgraded: its next connection looks
    // again. Ending its connections stands for the reconnect that any outage brings.
    try await admin(
      """
      SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()
      """)
    var last: HubError?
    for _ in 0..<5 {
      do throws(HubError) {
        _ = try await running.records(after: .start, limit: 10)
      } catch {
        last = error
        if case .needsNewerDocsync = error { break }
      }
    }
    expectNeedsNewer(last)
  }

  /// Step 13 marks step 12 (objects keyed by account number) as one devices must know, step 14
  /// (objects read through functions) and step 15 (blobs' twins) mark themselves, and this
  /// docsync, which knows them all, works on.
  @Test(.enabled(if: PostgresTestCluster.isEnabled))
  func stepTwelveIsMarkedAsNeeded() async throws {
    let (url, database) = try await PostgresTestCluster.freshHubURL()
    let marks = try await PostgresTestCluster.withAdminConnection(database: database) {
      connection in
      let rows = try await connection.rows(
        """
        SELECT version, devices_from FROM docsync.migrations WHERE devices_from > 0
        ORDER BY version
        """)
      return try rows.decode((Int, Int).self).map { [$0.0, $0.1] }
    }
    #expect(marks == [[12, 12], [14, 14], [15, 15]])
    let hub = try PostgresHub(location: url)
    try await hub.append([makeRecord("works")])
    #expect(try await allRecords(hub) == [makeRecord("works")])
  }
}
