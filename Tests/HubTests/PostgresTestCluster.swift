import Foundation
import Hub
import Logging
import PostgresHub
import PostgresNIO
import Testing

import func MountHarness.run

/// The private PostgreSQL cluster that Tools/test starts: `DOCSYNC_TEST_POSTGRES` is a superuser
/// URL on 127.0.0.1, `DOCSYNC_TEST_POSTGRES_CA` the CA that signed the server's certificate.
enum PostgresTestCluster {
  static let environment = ProcessInfo.processInfo.environment
  static let adminURL = environment["DOCSYNC_TEST_POSTGRES"]
  static let certificateAuthority = environment["DOCSYNC_TEST_POSTGRES_CA"]

  /// Locally the PostgreSQL tests skip without a cluster; under CI=true they run and fail.
  static let isEnabled = adminURL != nil || environment["CI"] == "true"

  static var admin: PostgresLocation {
    get throws {
      guard let adminURL else { throw ClusterMissing() }
      return try PostgresLocation(parsing: adminURL)
    }
  }

  static let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  static func uniqueName(_ prefix: String) -> String {
    prefix + "_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
  }

  /// Runs `sql` as the superuser in `database`.
  static func adminQuery(_ sql: String, database: String = "postgres") async throws {
    try await withAdminConnection(database: database) { connection -> Void in
      try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    }
  }

  static func withAdminConnection<T: Sendable>(
    database: String = "postgres", _ body: (PostgresConnection) async throws -> T
  ) async throws -> T {
    let admin = try admin
    return try await withConnection(
      user: admin.user, password: admin.password ?? "", database: database, body)
  }

  /// A plain connection with no hub in between, for raw SQL.
  static func withConnection<T: Sendable>(
    user: String, password: String, database: String,
    _ body: (PostgresConnection) async throws -> T
  ) async throws -> T {
    let admin = try admin
    let connection = try await PostgresConnection.connect(
      configuration: .init(
        host: admin.host, port: admin.port, username: user, password: password,
        database: database, tls: .disable),
      id: 1, logger: logger)
    do {
      let value = try await body(connection)
      try await connection.close()
      return value
    } catch {
      try? await connection.close()
      throw error
    }
  }

  static let logger = Logger(label: "hubtests.postgres")

  /// A fresh database, created empty: the hub's schema comes from `docsync hub add-device`.
  static func createDatabase() async throws -> String {
    let name = uniqueName("hubtest")
    try await adminQuery("CREATE DATABASE \(name)")
    return name
  }

  /// A new database with two accounts, X and Y, one device each (passwords "x-pw" and
  /// "y-pw"): where the tests that one account cannot reach another's rows start.
  static func twoAccounts() async throws -> (
    database: String, xDevice: String, yAccount: String, xURL: String, yURL: String
  ) {
    let database = try await createDatabase()
    let xDevice = uniqueName("x")
    let yAccount = uniqueName("y")
    let xURL = try await createAccount(
      database: database, account: uniqueName("x"), device: xDevice, password: "x-pw")
    let yURL = try await createAccount(
      database: database, account: yAccount, device: uniqueName("y"), password: "y-pw")
    return (database, xDevice, yAccount, xURL, yURL)
  }

  /// Runs `docsync hub add-device`, the administrator's documented way, and returns the
  /// device's hub URL. The command is waited for off the shared threads (``offThePool(_:)``):
  /// every PostgreSQL test makes an account, and all of them at once held those threads.
  static func createAccount(
    database: String, account: String, device: String, password: String,
    sslMode: String = "disable"
  ) async throws -> String {
    let admin = try admin
    let tls =
      certificateAuthority.map { "sslmode=verify-full&sslrootcert=\($0)" } ?? "sslmode=disable"
    // posix_spawn (MountHarness's `run`), not Foundation's Process: Process.run() in Swift
    // 6.3.1 over-reads a `dirent` of /proc/self/fd and crashed the whole test run (SIGSEGV in
    // memmove; swift-corelibs-foundation PR #5472).
    let command = [
      try docsyncBinary(), "hub", "add-device",
      "postgres://\(admin.user):\(admin.password ?? "")@\(admin.host):\(admin.port)/\(database)?\(tls)",
      account, device,
    ]
    let result = try await offThePool {
      try run(command, env: ["DOCSYNC_DEVICE_PASSWORD": password])
    }
    guard result.status == 0 else { throw AccountFailed(output: result.stdout + result.stderr) }
    return "postgres://\(device):\(password)@\(admin.host):\(admin.port)/\(database)"
      + "?sslmode=\(sslMode)"
  }

  /// `DOCSYNC_BIN` (Tools/test sets it), or `docsync` beside the test bundle.
  static func docsyncBinary() throws -> String {
    if let path = environment["DOCSYNC_BIN"], !path.isEmpty { return path }
    let beside = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("docsync")
    guard FileManager.default.isExecutableFile(atPath: beside.path) else {
      throw AccountFailed(output: "no docsync binary: set DOCSYNC_BIN or build it")
    }
    return beside.path
  }

  /// A new database with one account and one device role in it.
  static func freshHubURL() async throws -> (url: String, database: String) {
    let hub = try await oneDevice(password: "device-secret")
    return (hub.url, hub.database)
  }

  /// A new database with one account and one device of it: the device's role name and its
  /// hub URL.
  static func oneDevice(password: String) async throws -> (
    database: String, device: String, url: String
  ) {
    let database = try await createDatabase()
    let device = uniqueName("dev")
    let url = try await createAccount(
      database: database, account: uniqueName("acct"), device: device, password: password)
    return (database, device, url)
  }
}

struct ClusterMissing: Error, CustomStringConvertible {
  var description: String {
    "DOCSYNC_TEST_POSTGRES is not set: run the tests with Tools/test, which starts a cluster"
  }
}

struct AccountFailed: Error, CustomStringConvertible {
  let output: String
  var description: String { "docsync hub add-device failed: \(output)" }
}

func postgresFixture(url: String, database: String) throws -> HubFixture {
  HubFixture(
    hub: try PostgresHub(location: url),
    openAnother: { try PostgresHub(location: url) },
    corruptBlob: { hash in
      // Raw SQL as the superuser, from outside the hub, as a damaged disk would: flip the first
      // byte of the blob's first chunk.
      try await PostgresTestCluster.withAdminConnection(database: database) { connection -> Void in
        try await connection.query(
          """
          UPDATE docsync.chunks SET data = set_byte(data, 0, get_byte(data, 0) # 255)
          WHERE index = 0 AND upload = (
            SELECT upload FROM docsync.blobs WHERE hash = \(ByteBuffer(bytes: hash)))
          """, logger: PostgresTestCluster.logger)
      }
    },
    loseBlob: { hash in
      try await PostgresTestCluster.withAdminConnection(database: database) { connection -> Void in
        try await connection.query(
          "DELETE FROM docsync.blobs WHERE hash = \(ByteBuffer(bytes: hash))",
          logger: PostgresTestCluster.logger)
      }
    })
}

@Suite("PostgresHub conformance", .enabled(if: PostgresTestCluster.isEnabled))
struct PostgresHubConformanceTests {
  @Test(arguments: HubConformance.checks.map(\.name))
  func check(_ name: String) async throws {
    let (url, database) = try await PostgresTestCluster.freshHubURL()
    let fixture = try postgresFixture(url: url, database: database)
    let check = try #require(HubConformance.checks.first { $0.name == name })
    try await check.run(fixture)
  }
}

@Suite("PostgresHub content objects", .enabled(if: PostgresTestCluster.isEnabled))
struct PostgresObjectStoreTests {
  @Test(arguments: ObjectStoreConformance.checks.map(\.name))
  func check(_ name: String) async throws {
    let (url, database) = try await PostgresTestCluster.freshHubURL()
    let fixture = ObjectStoreFixture(
      hub: try PostgresHub(location: url),
      openAnother: { try PostgresHub(location: url) },
      ageObjects: {
        try await PostgresTestCluster.withAdminConnection(database: database) {
          connection -> Void in
          try await connection.query(
            "UPDATE docsync.objects SET touched = touched - interval '2 days'",
            logger: PostgresTestCluster.logger)
        }
      },
      corruptObject: { id in
        // Raw SQL as the superuser, from outside the hub, as a damaged disk would.
        try await PostgresTestCluster.withAdminConnection(database: database) {
          connection -> Void in
          try await connection.query(
            """
            UPDATE docsync.objects SET data = set_byte(data, 1, get_byte(data, 1) # 255)
            WHERE int8send(key) || rest = \(ByteBuffer(bytes: id))
            """, logger: PostgresTestCluster.logger)
        }
      })
    let check = try #require(ObjectStoreConformance.checks.first { $0.name == name })
    try await check.run(fixture)
  }
}
