import Foundation
import Hub
import Logging
import MountHarness
import PostgresNIO
import Testing

@testable import PostgresHub

/// A write the PostgreSQL hub acknowledges is committed: stopped and started again, the server
/// still has it (PostgresConnection.inTransaction). Each kind of write runs in a database of
/// its own on a private cluster, which the test stops while every write waits in its commit: a
/// deferred trigger on the table the write changes sleeps at COMMIT, after the statement that
/// changed it was answered. A write that returned then, before its commit, was lost.
@Suite("PostgresHub writes that survive a stop", .enabled(if: PostgresTestCluster.isEnabled))
struct PostgresDurabilityTests {
  @Test(.timeLimit(.minutes(5)))
  func acknowledgedWritesSurviveAStop() async throws {
    try TestEnvironment.require(programs: ["psql"])
    // Used by this test alone, one step at a time, on threads of its own or the test's.
    nonisolated(unsafe) let cluster = try await offThePool {
      UncheckedCluster(try PrivatePostgresCluster())
    }.cluster
    defer { cluster.remove() }
    var writes: [DurableWrite] = []
    for kind in DurableWrite.Kind.allCases {
      writes.append(try await DurableWrite(kind, on: cluster))
    }

    // Every commit held back: each write has been answered its last statement, or waits in
    // COMMIT, when the server stops.
    for write in writes { try await write.holdCommits(true) }
    let pending = writes.map { write in
      Task { () -> Result<Void, any Error> in
        do {
          try await write.run(write.hub())
          return .success(())
        } catch {
          return .failure(error)
        }
      }
    }
    let held = try await cluster.admin.waitForSleepers(writes.count, within: .seconds(60))
    #expect(held == writes.count, "only \(held) of \(writes.count) writes reached their commit")
    try await offThePool { try cluster.stop() }
    var outcomes: [Result<Void, any Error>] = []
    for task in pending { outcomes.append(await task.value) }
    try await offThePool { try cluster.start() }
    for (write, outcome) in zip(writes, outcomes) {
      let present = try await write.isPresent(write.hub())
      switch outcome {
      case .success:
        #expect(present, "\(write.kind) was acknowledged, and lost when the server stopped")
      case .failure(let error):
        #expect(error is HubError, "\(write.kind): \(error)")
      }
    }

    // The device tries again, and what it was told is done stays done.
    for write in writes {
      try await write.holdCommits(false)
      try await write.run(write.hub())
    }
    try await offThePool {
      try cluster.stop()
      try cluster.start()
    }
    for write in writes {
      #expect(try await write.isPresent(write.hub()), "\(write.kind) lost after a stop")
    }
  }

  /// The administrator's writes cannot be held back the same way (roles live in catalogs,
  /// which take no trigger); they commit together, and a device added or removed stays so.
  @Test(.timeLimit(.minutes(3)))
  func addedAndRemovedDevicesSurviveAStop() async throws {
    // Used by this test alone, one step at a time, on threads of its own or the test's.
    nonisolated(unsafe) let cluster = try await offThePool {
      UncheckedCluster(try PrivatePostgresCluster())
    }.cluster
    defer { cluster.remove() }
    let database = PostgresTestCluster.uniqueName("durable")
    try await cluster.admin.query("CREATE DATABASE \(database)")
    let admin = try HubAdministration(adminURL: cluster.adminURL(database: database))
    let kept = PostgresTestCluster.uniqueName("kept"), gone = PostgresTestCluster.uniqueName("gone")
    let account = PostgresTestCluster.uniqueName("acct")
    try await admin.addDevice(account: account, role: kept, password: "kept-pw")
    try await admin.addDevice(account: account, role: gone, password: "gone-pw")
    try await admin.removeDevice(role: gone)
    try await offThePool {
      try cluster.stop()
      try cluster.start()
    }
    let devices = try await admin.accounts().first { $0.name == account }?.devices
    #expect(devices == [kept])
    let hub = try PostgresHub(
      location: "postgres://\(kept):kept-pw@127.0.0.1:\(cluster.port)/\(database)?sslmode=disable")
    #expect(try await hub.records(after: .start, limit: 1).records.isEmpty)
  }
}
