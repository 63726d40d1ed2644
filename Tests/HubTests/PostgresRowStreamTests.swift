import Foundation
import Hub
import PostgresNIO
import Testing

@testable import PostgresHub

/// A read whose connection the server closes while its rows are on their way fails with an
/// error, and the process lives on. postgres-nio's row sequence trapped there
/// (`RowStreamStateMachine.channelReadComplete`, with TLS and without) and took three daemons
/// of a load run down when the server stopped; the hub reads rows through
/// `PostgresConnection.rows`, which does not wait for a consumer between batches.
@Suite("PostgresHub reads cut off by the server", .enabled(if: PostgresTestCluster.isEnabled))
struct PostgresRowStreamTests {
  /// Pages of this many records, of 4 KiB each: 12 MB, which the server sends over many reads
  /// and, when the reader falls behind, waits to send (wait event ClientWrite).
  static let pageSize = 3_000
  static let rounds = 8

  @Test(.timeLimit(.minutes(5)), arguments: ["disable", "verify-full"])
  func aReadCutOffMidStreamFailsAndTheProcessLivesOn(_ sslMode: String) async throws {
    let database = try await PostgresTestCluster.createDatabase()
    let device = PostgresTestCluster.uniqueName("reader")
    var url = try await PostgresTestCluster.createAccount(
      database: database, account: PostgresTestCluster.uniqueName("acct"), device: device,
      password: "pw", sslMode: sslMode)
    if sslMode == "verify-full" {
      url += "&sslrootcert=\(try #require(PostgresTestCluster.certificateAuthority))"
    }
    let writer = try PostgresHub(location: url)
    let payload = [UInt8](repeating: 0x2a, count: 4096)
    for start in stride(from: 0, to: Self.pageSize, by: 500) {
      try await writer.append(
        (start..<start + 500).map { index in
          HubRecord(id: HubHash.sha256(Array("record \(index)".utf8)), payload: payload)
        })
    }

    var cutOff = 0
    for round in 0..<Self.rounds {
      let reader = try PostgresHub(location: url)
      _ = try await reader.records(after: .start, limit: 1)
      let read = Task { try await reader.records(after: .start, limit: Self.pageSize) }
      // Half the rounds cut the read off while the server waits for the reader to take rows,
      // as when a daemon's connection was cut by the stop; the others as soon as it sends.
      let terminated = try await Self.terminateRead(
        database: database, role: device, onceItWaits: round.isMultiple(of: 2))
      switch await read.result {
      case .success(let page):
        #expect(page.records.count == Self.pageSize, "round \(round): a short page")
      case .failure(let error):
        #expect(terminated, "round \(round): \(error)")
        guard case .unreachable = error as? HubError else {
          Issue.record("round \(round): \(error)")
          continue
        }
        cutOff += 1
      }
      // The hub answers again, on a new connection.
      #expect(try await reader.records(after: .start, limit: 1).records.count == 1)
    }
    #expect(cutOff > 0, "no read was cut off mid-stream: the test proves nothing")
    print("\(sslMode): \(cutOff) of \(Self.rounds) reads cut off mid-stream, none trapped")
  }

  /// Terminates the server process of `role`'s page read (as `pg_ctl stop -m fast` does every
  /// process), once it runs, or once it waits to send; whether it found one.
  static func terminateRead(database: String, role: String, onceItWaits: Bool) async throws
    -> Bool
  {
    let reading = """
      datname = '\(database)' AND usename = '\(role)' AND state = 'active'
        AND query LIKE '%FROM docsync.records%ORDER BY seq%'
      """
    let deadline = ContinuousClock.now + .seconds(3)
    return try await PostgresTestCluster.withAdminConnection { admin in
      while ContinuousClock.now < deadline {
        let condition = onceItWaits ? reading + " AND wait_event = 'ClientWrite'" : reading
        let result: EventLoopFuture<PostgresQueryResult> = admin.query(
          PostgresQuery(
            unsafeSQL: "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
              + condition), logger: PostgresTestCluster.logger)
        if try await result.get().rows.first?.decode(Int.self) ?? 0 > 0 { return true }
        try await Task.sleep(for: .milliseconds(2))
      }
      return false
    }
  }
}
