import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Where a `Library`'s devices sync.
public enum LibraryHub: Sendable {
  /// A SQLite hub file in the library's folder.
  case sqlite
  /// A fresh database with its own account and device role on the cluster that Tools/test
  /// starts (`DOCSYNC_TEST_POSTGRES`), reached over TLS with `sslmode=verify-full`.
  case postgres
  /// A hub location made by the test, with the variables the devices need for it.
  case location(String, environment: [String: String])

  /// The hub of a `Library.with` that names none: `DOCSYNC_TEST_HUB=postgres` runs every such
  /// test on PostgreSQL (Tools/test's second pass over the sync scenarios), and a test runs
  /// another test's body on another kind of hub with `LibraryHub.$current.withValue(...)`.
  @TaskLocal public static var current: LibraryHub =
    TestEnvironment.variables["DOCSYNC_TEST_HUB"] == "postgres" ? .postgres : .sqlite
}

/// The PostgreSQL cluster of Tools/test: `DOCSYNC_TEST_POSTGRES` is a superuser URL on
/// 127.0.0.1, `DOCSYNC_TEST_POSTGRES_CA` the CA that signed the server's certificate.
public enum TestPostgres {
  public static let adminURL = TestEnvironment.variables["DOCSYNC_TEST_POSTGRES"]
  public static let certificateAuthority = TestEnvironment.variables["DOCSYNC_TEST_POSTGRES_CA"]

  /// Locally the PostgreSQL-hub tests skip without a cluster; under CI=true they run and fail.
  public static let isEnabled = adminURL != nil || TestEnvironment.isCI

  public static func uniqueName(_ prefix: String) -> String {
    prefix + "_"
      + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
  }

  /// `admin` (a URL naming some database) with its database replaced by `database`.
  static func url(_ admin: String, database: String) throws -> String {
    guard var components = URLComponents(string: admin) else {
      throw RunError(description: "\(admin) is not a URL")
    }
    components.path = "/\(database)"
    guard let url = components.string else { throw RunError(description: "bad URL \(admin)") }
    return url
  }

  /// Creates `database` on the cluster of `admin`, then, with `docsync hub add-device` (the
  /// administrator's documented way), an account and a device role with a new password.
  static func createAccount(admin: String, database: String) throws -> (
    role: String, password: String
  ) {
    try check(
      ["psql", admin, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", "CREATE DATABASE \(database)"],
      timeout: .seconds(60))
    let role = uniqueName("dev")
    let password = uniqueName("pw")
    // The shared cluster is reached over TLS; a private one names its sslmode in its URL.
    let tls =
      admin.contains("?")
      ? ""
      : certificateAuthority.map { "?sslmode=verify-full&sslrootcert=\($0)" } ?? "?sslmode=disable"
    try check(
      [
        try MountFixture.docsyncBinary(), "hub", "add-device",
        try url(admin, database: database) + tls, uniqueName("acct"), role,
      ], env: ["DOCSYNC_DEVICE_PASSWORD": password], timeout: .seconds(60))
    return (role, password)
  }

  /// A fresh database and account on Tools/test's cluster: the device hub URL, the variables
  /// that carry its password, and what drops the database afterwards.
  public static func newAccount() throws -> (
    url: String, environment: [String: String], cleanup: () -> Void
  ) {
    guard let adminURL, let certificateAuthority else {
      throw RunError(
        description:
          "DOCSYNC_TEST_POSTGRES and DOCSYNC_TEST_POSTGRES_CA are not set: run the tests with "
          + "Tools/test, which starts a PostgreSQL cluster")
    }
    guard let admin = URLComponents(string: adminURL), let host = admin.host,
      let port = admin.port
    else { throw RunError(description: "DOCSYNC_TEST_POSTGRES is not a postgres:// URL") }
    let database = uniqueName("e2e")
    let (role, password) = try createAccount(admin: adminURL, database: database)
    let url =
      "postgres://\(role)@\(host):\(port)/\(database)?sslmode=verify-full"
      + "&sslrootcert=\(certificateAuthority)"
    return (
      url, ["PGPASSWORD": password],
      {
        _ = try? run(
          ["psql", adminURL, "-X", "-q", "-c", "DROP DATABASE IF EXISTS \(database) WITH (FORCE)"],
          timeout: .seconds(60))
      }
    )
  }
}

extension TestPostgres {
  /// A fresh database with the hub's schema and one account, and a login role that belongs to
  /// no account: the device hub URL of that role, the variables that carry its password, and
  /// what drops the database and the role afterwards.
  public static func newRoleWithoutAccount() throws -> (
    url: String, environment: [String: String], cleanup: () -> Void
  ) {
    let (accountURL, _, dropDatabase) = try newAccount()
    guard let adminURL, var components = URLComponents(string: accountURL) else {
      throw RunError(description: "DOCSYNC_TEST_POSTGRES is not set")
    }
    let role = uniqueName("stray")
    let password = uniqueName("pw")
    try check(
      [
        "psql", adminURL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c",
        "CREATE ROLE \(role) LOGIN PASSWORD '\(password)'",
      ], timeout: .seconds(60))
    components.user = role
    guard let url = components.string else { throw RunError(description: "bad URL") }
    return (
      url, ["PGPASSWORD": password],
      {
        dropDatabase()
        _ = try? run(
          ["psql", adminURL, "-X", "-q", "-c", "DROP ROLE IF EXISTS \(role)"],
          timeout: .seconds(60))
      }
    )
  }
}

extension Trait where Self == ConditionTrait {
  /// Skips the test locally when no PostgreSQL cluster is given; never under CI.
  public static var postgresHub: Self {
    .enabled("needs DOCSYNC_TEST_POSTGRES (Tools/test starts a cluster)") {
      TestPostgres.isEnabled
    }
  }
}

/// A PostgreSQL cluster of the test's own, which it may stop and start: a temporary folder, a
/// free loopback port, no TLS. initdb refuses root, so under root it runs as the `postgres`
/// user; an ordinary user (as Tools/test runs the end-to-end tests) runs it as itself.
public final class PrivatePostgresCluster {
  public static let binaries = "/usr/lib/postgresql/15/bin"
  public let folder: String
  public let port: Int
  public let adminPassword: String
  public private(set) var isRunning = false

  /// What runs a server program: as `postgres` under root, else as this user.
  static let serverUser: [String] =
    TestEnvironment.isRoot ? ["runuser", "-u", "postgres", "--"] : []

  public init() throws {
    folder = try check(["mktemp", "-d", "/tmp/docsync-e2e-postgres.XXXXXX"]).stdout
      .trimmingCharacters(in: .whitespacesAndNewlines)
    port = try Self.freePort()
    adminPassword = TestPostgres.uniqueName("admin")
    do {
      try adminPassword.write(toFile: "\(folder)/pwfile", atomically: false, encoding: .utf8)
      if TestEnvironment.isRoot {
        try check(["chown", "postgres:", folder, "\(folder)/pwfile"])
      }
      try check(
        Self.serverUser + [
          "\(Self.binaries)/initdb", "-D", "\(folder)/data", "-U", "docsync_admin",
          "--pwfile=\(folder)/pwfile", "-A", "scram-sha-256",
        ], timeout: .seconds(120))
      try start()
    } catch {
      remove()
      throw error
    }
  }

  deinit { remove() }

  /// The superuser's URL for `database`.
  public func adminURL(database: String = "postgres") -> String {
    "postgres://docsync_admin:\(adminPassword)@127.0.0.1:\(port)/\(database)?sslmode=disable"
  }

  public func start() throws {
    // The server outlives this call: it must not inherit a descriptor that a parallel test has
    // open in its mount, or that mount stays busy. The shell closes every descriptor above 2.
    try check(
      [
        "bash", "-c",
        #"for fd in $(ls /proc/$$/fd); do (( fd > 2 )) && eval "exec $fd>&-"; done; "#
          + #"exec "$@""#,
        "bash",
      ] + Self.serverUser + [
        "\(Self.binaries)/pg_ctl", "-D", "\(folder)/data", "-l", "\(folder)/log", "-w", "-t",
        "60", "-o", "-k \(folder) -p \(port) -c listen_addresses=127.0.0.1 -c fsync=off",
        "start",
      ], timeout: .seconds(90))
    isRunning = true
  }

  public func stop() throws {
    isRunning = false
    try check(
      Self.serverUser + [
        "\(Self.binaries)/pg_ctl", "-D", "\(folder)/data", "-m", "fast", "-w", "-t", "60",
        "stop",
      ], timeout: .seconds(90))
  }

  /// Stops the server if it runs and deletes its folder.
  public func remove() {
    if FileManager.default.fileExists(atPath: "\(folder)/data/postmaster.pid") {
      _ = try? run(
        Self.serverUser + [
          "\(Self.binaries)/pg_ctl", "-D", "\(folder)/data", "-m", "immediate", "-w", "stop",
        ], timeout: .seconds(60))
    }
    isRunning = false
    try? FileManager.default.removeItem(atPath: folder)
  }

  /// A new database with an account and a device role: the device hub URL (no TLS) and the
  /// variables that carry its password.
  public func newLibraryHub() throws -> LibraryHub {
    let database = TestPostgres.uniqueName("e2e")
    let (role, password) = try TestPostgres.createAccount(
      admin: adminURL(), database: database)
    return .location(
      "postgres://\(role)@127.0.0.1:\(port)/\(database)?sslmode=disable",
      environment: ["PGPASSWORD": password])
  }

  public static func freePort() throws -> Int {
    let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socketFD >= 0 else { throw RunError(description: "socket: \(errno)") }
    defer { close(socketFD) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(socketFD, $0, length) == 0 && getsockname(socketFD, $0, &length) == 0
      }
    }
    guard bound else { throw RunError(description: "bind 127.0.0.1:0: \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
  }
}
