import Crypto
import Foundation
import Hub
import PostgresNIO

/// What an administrator does to a PostgreSQL hub, as a role that may create roles and
/// schemas: apply the schema, give a person an account and each device a login role, take a
/// device away, list the accounts.
///
/// An account is the NOLOGIN role `docsync_account_ACCOUNT`; a device is a LOGIN role that is
/// a member of exactly one account. Roles belong to the whole cluster, so one account serves
/// every docsync database of the cluster it is used in.
public struct HubAdministration: Sendable {
  /// One account and its device roles, for `docsync hub accounts`.
  public struct Account: Sendable, Equatable, Codable {
    public var name: String
    public var devices: [String]
    public var records: Int

    public init(name: String, devices: [String], records: Int) {
      self.name = name
      self.devices = devices
      self.records = records
    }
  }

  public let location: PostgresLocation

  public init(adminURL: String) throws(HubError) {
    location = try PostgresLocation(parsing: adminURL)
  }

  /// 1 to 40 of a-z, 0-9 and _.
  static func isAccountName(_ name: String) -> Bool {
    (1...40).contains(name.utf8.count) && name.utf8.allSatisfy(isNameByte)
  }

  /// A lower-case SQL name: a letter or _ first, at most 63 bytes.
  static func isRoleName(_ name: String) -> Bool {
    guard let first = name.utf8.first, name.utf8.count <= 63 else { return false }
    return !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
      && name.utf8.allSatisfy(isNameByte)
  }

  private static func isNameByte(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
      || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
  }

  /// Applies the schema steps the database lacks; returns the step it is at afterwards.
  @discardableResult
  public func initialize() async throws(HubError) -> Int {
    try await withConnection { connection in
      try await Migrations.run(on: connection)
      return try await Migrations.appliedVersion(connection)
    }
  }

  /// Creates the account when missing, and the device's login role in it (or gives an existing
  /// role the new password and adds it to the account). Applies the schema first.
  public func addDevice(account: String, role: String, password: String) async throws(HubError) {
    guard Self.isAccountName(account) else {
      throw .invalidLocation("ACCOUNT must be 1 to 40 of a-z, 0-9 and _, not \"\(account)\"")
    }
    guard Self.isRoleName(role), !role.hasPrefix("docsync_account_")
    else {
      throw .invalidLocation(
        "ROLE must be a lower-case SQL name that does not start with docsync_account_, not \"\(role)\""
      )
    }
    guard !password.isEmpty, !password.contains("\0") else {
      throw .invalidLocation("the device's password is empty or holds a NUL byte")
    }
    let accountRole = "docsync_account_\(account)"
    try await withConnection { connection in
      // The schema steps commit by themselves; then the account, the role, its password and
      // its membership commit together, before the administrator is told the device exists.
      try await Migrations.run(on: connection)
      try await connection.inTransaction { connection in
        try await Self.addRole(role, to: accountRole, password: password, connection)
      }
    }
  }

  private static func addRole(
    _ role: String, to accountRole: String, password: String, _ connection: PostgresConnection
  ) async throws {
    let others = try await Self.accounts(of: role, connection).filter { $0 != accountRole }
    if !others.isEmpty {
      throw HubError.invalidLocation(
        "role \(role) is a device of \(others.joined(separator: ", ")) already: remove it first")
    }
    for statement in [
      "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '\(accountRole)') "
        + "THEN CREATE ROLE \(accountRole) NOLOGIN; END IF; END $$",
      "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '\(role)') "
        + "THEN CREATE ROLE \(role) LOGIN; END IF; END $$",
      // ALTER ROLE takes no parameters, so the password would travel in the statement's
      // text, where the server's log may keep it: it goes as a SCRAM verifier instead.
      "ALTER ROLE \(role) LOGIN PASSWORD '\(Self.passwordLiteral(password))'",
      "GRANT \(accountRole) TO \(role)",
    ] {
      try await connection.run(PostgresQuery(unsafeSQL: statement))
    }
  }

  /// Drops a device's login role: it can no longer connect. What it synced stays in its
  /// account.
  public func removeDevice(role: String) async throws(HubError) {
    guard Self.isRoleName(role) else {
      throw .invalidLocation("\"\(role)\" is not a device role name")
    }
    try await withConnection { connection in
      try await connection.inTransaction { connection in
        guard try await !Self.accounts(of: role, connection).isEmpty else {
          throw HubError.invalidLocation("\(role) is not a device of any docsync account")
        }
        try await connection.run(
          PostgresQuery(unsafeSQL: "DROP ROLE \(role)"))
      }
    }
  }

  /// Every account, with its device roles and how many records its library holds here.
  public func accounts() async throws(HubError) -> [Account] {
    try await withConnection { connection in
      let rows = try await connection.rows(
        """
        SELECT substr(a.rolname, 17)::text,
          coalesce(array_agg(d.rolname::text ORDER BY d.rolname)
            FILTER (WHERE d.rolname IS NOT NULL), '{}'),
          (SELECT count(*) FROM docsync.records AS r WHERE r.account = a.rolname)::bigint
        FROM pg_roles AS a
        LEFT JOIN pg_auth_members AS m ON m.roleid = a.oid
        LEFT JOIN pg_roles AS d ON d.oid = m.member AND d.rolcanlogin
        WHERE a.rolname LIKE 'docsync\\_account\\_%' AND NOT a.rolcanlogin
        GROUP BY a.rolname ORDER BY a.rolname
        """)
      var result: [Account] = []
      for (name, devices, records) in try rows.decode((String, [String], Int).self) {
        result.append(Account(name: name, devices: devices, records: records))
      }
      return result
    }
  }

  /// What ALTER ROLE is given for `password`, quoted for a standard string (only ' is
  /// special): a SCRAM-SHA-256 verifier computed here, as libpq's `\password` does, so that
  /// the server never sees the password. A password outside printable ASCII would need
  /// SASLprep first, which the server then applies itself: it goes as it is.
  static func passwordLiteral(_ password: String, salt: [UInt8]? = nil) -> String {
    guard password.utf8.allSatisfy({ (0x20...0x7e).contains($0) }) else {
      return password.replacingOccurrences(of: "'", with: "''")
    }
    var generator = SystemRandomNumberGenerator()
    let salt = salt ?? (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
    let iterations = 4096
    let key = SymmetricKey(data: Array(password.utf8))
    // PBKDF2-HMAC-SHA-256 with one output block (RFC 8018), as RFC 5802 defines SaltedPassword.
    var block = Array(HMAC<SHA256>.authenticationCode(for: salt + [0, 0, 0, 1], using: key))
    var salted = block
    for _ in 1..<iterations {
      block = Array(HMAC<SHA256>.authenticationCode(for: block, using: key))
      for index in salted.indices { salted[index] ^= block[index] }
    }
    let saltedKey = SymmetricKey(data: salted)
    let clientKey = Array(
      HMAC<SHA256>.authenticationCode(for: Array("Client Key".utf8), using: saltedKey))
    let storedKey = Array(SHA256.hash(data: clientKey))
    let serverKey = Array(
      HMAC<SHA256>.authenticationCode(for: Array("Server Key".utf8), using: saltedKey))
    func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
    return "SCRAM-SHA-256$\(iterations):\(base64(salt))$\(base64(storedKey)):\(base64(serverKey))"
  }

  static func accounts(of role: String, _ connection: PostgresConnection) async throws
    -> [String]
  {
    let rows = try await connection.rows(
      """
      SELECT a.rolname::text FROM pg_roles AS a
      JOIN pg_auth_members AS m ON m.roleid = a.oid
      JOIN pg_roles AS d ON d.oid = m.member
      WHERE d.rolname = \(role) AND a.rolname LIKE 'docsync\\_account\\_%'
      """)
    var names: [String] = []
    for name in try rows.decode(String.self) { names.append(name) }
    return names
  }

  func withConnection<T: Sendable>(
    _ body: @Sendable (PostgresConnection) async throws -> T
  ) async throws(HubError) -> T {
    let connector = PasswordSafeConnector(
      configuration: try location.connectionConfiguration(), description: location.description)
    let connection = try await connector.connect(id: 1)
    do {
      let value = try await body(connection)
      try? await connection.close()
      return value
    } catch {
      try? await connection.close()
      throw HubError(postgres: error, location: location.description)
    }
  }
}
