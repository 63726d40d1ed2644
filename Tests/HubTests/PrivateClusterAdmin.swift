import Foundation
import MountHarness
import PostgresNIO

/// The superuser of a ``PrivatePostgresCluster``, for raw SQL around a test's hubs.
struct PrivateClusterAdmin: Sendable {
  let port: Int
  let password: String

  /// Runs `sql` as the superuser in `database`.
  func query(_ sql: String, database: String = "postgres") async throws {
    _ = try await rows(sql, database: database)
  }

  /// The first column of the first row of `sql`, a count, as the superuser in `database`.
  func count(_ sql: String, database: String) async throws -> Int {
    try await rows(sql, database: database).first?.decode(Int.self) ?? 0
  }

  private func rows(_ sql: String, database: String) async throws -> [PostgresRow] {
    let connection = try await PostgresConnection.connect(
      configuration: .init(
        host: "127.0.0.1", port: port, username: "docsync_admin", password: password,
        database: database, tls: .disable),
      id: 1, logger: PostgresTestCluster.logger)
    do {
      let result: EventLoopFuture<PostgresQueryResult> = connection.query(
        PostgresQuery(unsafeSQL: sql), logger: PostgresTestCluster.logger)
      let rows = try await result.get().rows
      try await connection.close()
      return rows
    } catch {
      try? await connection.close()
      throw error
    }
  }

  /// Waits until `count` server processes sleep (a held-back commit); how many did.
  func waitForSleepers(_ count: Int, within limit: Duration) async throws -> Int {
    let deadline = ContinuousClock.now + limit
    while true {
      let sleeping = try await self.count(
        "SELECT count(*)::int8 FROM pg_stat_activity WHERE wait_event = 'PgSleep'",
        database: "postgres")
      if sleeping >= count || ContinuousClock.now >= deadline { return sleeping }
      try await Task.sleep(for: .milliseconds(100))
    }
  }
}

extension PrivatePostgresCluster {
  var admin: PrivateClusterAdmin { PrivateClusterAdmin(port: port, password: adminPassword) }
}
