import Foundation
import Hub
import Logging
import PostgresNIO
import Synchronization

/// The hub on a PostgreSQL server, for devices on different machines.
///
/// Opening one does not connect: the first operation does, so a mount starts while the server is
/// away, its operations fail with ``HubError/unreachable(_:)`` until the server returns, and the
/// sync engine retries. A device connects as a role of its account; row-level security (see the
/// migrations) keeps every other account's records and blobs invisible and unwritable.
public final class PostgresHub: Hub {
  /// Where the hub is, with any password left out.
  public let location: PostgresLocation

  let configuration: PostgresConnection.Configuration
  let connections: Connections
  let changes = ChangeSignal()
  private let listener: Task<Void, Never>
  /// When this hub last swept the account's abandoned uploads (``uploadSweepIsDue()``).
  let lastUploadSweep = Mutex<ContinuousClock.Instant?>(nil)

  /// How often a put sweeps the account's abandoned uploads: they are swept once a day old, so
  /// a sweep per blob put gains nothing over one every few minutes, and even by index a sweep
  /// reads every upload of the account older than a day (each finished one stays as long as
  /// its blob): 70 ms at 100,000 of them (Tools/bench-upload-sweep.sh), for each large file.
  static let uploadSweepInterval = Duration.seconds(600)

  /// Bytes per stored chunk, and the most a blob transfer holds in memory at once.
  static let chunkSize = 1 << 20

  /// How often ``waitForChanges(after:timeout:)`` looks at the records even without a
  /// notification: a notification sent while the listening connection was down is lost.
  static let pollInterval = Duration.seconds(1)

  /// The longest one statement may take to answer before the server counts as unreachable.
  /// Every statement moves a bounded amount (a chunk of 1 MiB, a page of records), so this
  /// only cuts off a server that stopped answering, or a connection that a change of network
  /// left dead without a word: TCP itself gives up on those after a quarter of an hour.
  let answerWithin: Duration

  /// Parses `location` and prepares the connection settings; connects on first use.
  /// `answerWithin` is the longest a statement may take (see ``answerWithin``); an idle look
  /// for changes waits for at most a quarter of it.
  public init(location: String, answerWithin: Duration = .seconds(120)) throws(HubError) {
    self.answerWithin = answerWithin
    self.location = try PostgresLocation(parsing: location)
    configuration = try self.location.connectionConfiguration()
    connections = Connections(
      configuration: configuration, description: self.location.description,
      role: self.location.user)
    listener = Task { [connections, changes] in
      await Self.listen(connections: connections, changes: changes)
    }
  }

  deinit {
    listener.cancel()
    let connections = connections
    Task { await connections.closeAll() }
  }

  /// Keeps one connection listening for the account's notifications, reconnecting after a
  /// failure; every notification, and every loss of the connection, wakes the waiters so that
  /// they look at the records themselves.
  static func listen(connections: Connections, changes: ChangeSignal) async {
    while !Task.isCancelled {
      do {
        let connection = try await connections.connectListener()
        defer { Task { try? await connection.close() } }
        let channel = try await accountChannel(connection)
        try await connection.listen(on: channel) { notifications in
          for try await _ in notifications { changes.signal() }
        }
      } catch {}
      changes.signal()
      await MonotonicTimer.shared.sleep(for: .milliseconds(500))
    }
  }

  /// The notification channel of the connected role's account: a random name that only the
  /// account's roles can read.
  static func accountChannel(_ connection: PostgresConnection) async throws -> String {
    // The first look of an account makes its channel: a write, whose name every device's
    // notifications are then sent to.
    let found = try await connection.inTransaction { connection in
      let rows = try await connection.rows(
        "SELECT docsync.notify_channel()")
      var found: String?
      for channel in try rows.decode(String?.self) { found = found ?? channel }
      return found
    }
    guard let found else { throw HubError.noAccount }
    return found
  }

  /// The account of the connected role, nil when it belongs to none.
  static func account(_ connection: PostgresConnection) async throws -> String? {
    let rows = try await connection.rows(
      "SELECT docsync.current_account()::text")
    var found: String?
    for account in try rows.decode(String?.self) { found = found ?? account }
    return found
  }

  /// Runs `body` on a connection of the pool: for statements that change nothing on the server;
  /// a write goes through ``withTransaction(answerWithin:_:)``, since a statement outside a
  /// transaction is not yet durable when postgres-nio says it is done. An answer that does
  /// not come within `limit`
  /// (``answerWithin`` when nil), or that cannot come because the server closed the
  /// connection, ends in ``HubError/unreachable(_:)``: postgres-nio itself would wait until
  /// TCP gives up in the one case, and was seen to wait for good in the other.
  func withConnection<T: Sendable>(
    answerWithin limit: Duration? = nil,
    _ body: @escaping @Sendable (PostgresConnection) async throws -> T
  ) async throws(HubError) -> T {
    let connection = try await connections.take()
    let location = location.description
    let limit = limit ?? answerWithin
    let deadline = MonotonicTimer.deadline(after: limit)
    do {
      let value = try await WatchedWork.run(
        cannotFinish: { connection.isClosed || MonotonicTimer.now() >= deadline },
        failure: {
          HubError.unreachable(
            connection.isClosed
              ? "\(location): the server closed the connection before it answered"
              : "\(location): no answer within \(limit)")
        }
      ) { try await body(connection) }
      await connections.giveBack(connection)
      return value
    } catch {
      let hubError = HubError(postgres: error, location: location.description)
      // A connection that failed for any reason but a refused statement may be mid-transaction
      // or broken: close it rather than hand it to the next caller. So is one the server
      // ended with a FATAL error (a stop, pg_terminate_backend): it closes the connection
      // next, which postgres-nio may not have seen yet, and the next caller failed on it
      // after every restart of the server (PostgresRowStreamTests).
      if let refused = error as? PSQLError, case .server = refused.code,
        !["FATAL", "PANIC"].contains(refused.serverInfo?[.severity]), !connection.isClosed
      {
        await connections.giveBack(connection)
      } else {
        closeInBackground(connection)
      }
      throw hubError
    }
  }

  /// Runs `body` on a connection of the pool in a transaction that is committed before this
  /// returns (``PostgresConnection/inTransaction(_:)``), rolled back when it throws.
  /// Every statement that changes anything on the server goes through here, reads too when
  /// they touch a row (`docsync.missing_objects` keeps the objects it finds from the sweep):
  /// what it returns, a device may rely on after the server stopped.
  func withTransaction<T: Sendable>(
    answerWithin limit: Duration? = nil,
    _ body: @escaping @Sendable (PostgresConnection) async throws -> T
  ) async throws(HubError) -> T {
    try await withConnection(answerWithin: limit) { connection in
      try await connection.inTransaction(body)
    }
  }
}

/// The hub's own small pool: idle connections are reused, a broken one is dropped, and a new one
/// is opened on demand, so a server that went away is reconnected on the next operation.
///
/// PostgresClient's pool is not used because it keeps retrying a dead server while callers wait;
/// a device that is offline should learn it at once and queue its work.
actor Connections {
  static let logger = Logger(label: "docsync.hub.postgres")

  let connector: PasswordSafeConnector
  let description: String
  /// The login role, named in the error when it belongs to no account.
  let role: String
  private var idle: [PostgresConnection] = []
  private var migrated = false
  /// The schema step the hub is at, once a connection has looked (0 before).
  private(set) var schemaVersion = 0
  /// Whether the role was seen to belong to an account. Without one, reading finds nothing
  /// and every write breaks a row-level security policy; a first mount must say why instead.
  private var hasAccount = false
  private var nextID = 0
  private var closed = false

  init(configuration: PostgresConnection.Configuration, description: String, role: String) {
    connector = PasswordSafeConnector(configuration: configuration, description: description)
    self.description = description
    self.role = role
  }

  func take() async throws(HubError) -> PostgresConnection {
    while let connection = idle.popLast() {
      if !connection.isClosed { return connection }
    }
    let connection = try await open()
    do {
      if !migrated {
        schemaVersion = try await Migrations.run(on: connection)
      } else {
        // An administrator may have upgraded the hub while this device ran: each new
        // connection looks again, so that the device refuses in one line rather than failing
        // query by query.
        try await Migrations.checkDevicesFrom(connection)
      }
    } catch {
      closeInBackground(connection)
      throw HubError(postgres: error, location: description)
    }
    migrated = true
    if !hasAccount {
      let account: String?
      do {
        account = try await PostgresHub.account(connection)
      } catch {
        closeInBackground(connection)
        throw HubError(postgres: error, location: description)
      }
      guard account != nil else {
        closeInBackground(connection)
        throw HubError.noAccount(role: role)
      }
      hasAccount = true
    }
    return connection
  }

  func giveBack(_ connection: PostgresConnection) async {
    if closed || idle.count >= 4 {
      closeInBackground(connection)
    } else {
      idle.append(connection)
    }
  }

  func connectListener() async throws(HubError) -> PostgresConnection {
    // Through take(), so that the schema exists before the listener asks for its account.
    let connection = try await take()
    return connection
  }

  func closeAll() async {
    closed = true
    for connection in idle { closeInBackground(connection) }
    idle = []
  }

  private func open() async throws(HubError) -> PostgresConnection {
    nextID += 1
    return try await connector.connect(id: nextID)
  }
}

/// Closes a connection without waiting for it to close: one the server has closed already may
/// never finish closing in postgres-nio, and nothing here needs to wait.
func closeInBackground(_ connection: PostgresConnection) {
  Task { try? await connection.close() }
}

extension HubError {
  static let noAccount = HubError.invalidLocation("the role belongs to no docsync account")

  /// `role` has no account: what an administrator runs to give it one.
  static func noAccount(role: String) -> HubError {
    .invalidLocation(
      "the PostgreSQL role \(role) belongs to no docsync account: an administrator gives it one with "
        + "docsync hub add-device ADMIN-URL ACCOUNT \(role)")
  }

  /// Sorts a postgres-nio failure into what a caller can do about it, in one line.
  init(postgres error: any Error, location: String) {
    if let error = error as? HubError {
      self = error
      return
    }
    guard let error = error as? PSQLError else {
      self = .unreachable("\(location): \(oneLine(String(describing: error)))")
      return
    }
    // An unexpected message names itself only in the error's reflection.
    let underlying =
      error.underlying.map { oneLine(String(describing: $0)) }
      ?? (error.code == .unexpectedBackendMessage
        ? oneLine(String(reflecting: error)) : "\(error.code)")
    switch error.code {
    case .server:
      let state = error.serverInfo?[.sqlState] ?? ""
      let message = oneLine(error.serverInfo?[.message] ?? "the server refused the request")
      switch state {
      case "28P01", "28000":
        self = .invalidLocation("\(location): \(message) (check PGPASSWORD or ~/.pgpass)")
      case "23502":
        // A NOT NULL account: docsync.current_account() found none for this role.
        self = .noAccount
      case "XX001":
        // data_corrupted: a replacement blob whose bytes do not hash to its key (step 3).
        self = .integrity("\(location): \(message)")
      case "3D000", "42501":
        self = .invalidLocation("\(location): \(message)")
      case _ where state.hasPrefix("08") || state.hasPrefix("57") || state == "53300":
        self = .unreachable("\(location): \(message)")
      default:
        self = .failed("\(location): \(message)")
      }
    case .sslUnsupported:
      self = .invalidLocation(
        "\(location): the server does not offer TLS, which sslmode requires")
    case .failedToAddSSLHandler:
      self = .invalidLocation("\(location): cannot start TLS: \(underlying)")
    case .connectionError:
      self =
        Self.isTLSFailure(error.underlying)
        ? .invalidLocation("\(location): TLS failed: \(underlying)")
        : .unreachable("cannot connect to \(location): \(underlying)")
    case .authMechanismRequiresPassword:
      self = .invalidLocation(
        "\(location): the server asks for a password; set PGPASSWORD or add it to ~/.pgpass")
    default:
      if Self.isTLSFailure(error.underlying) {
        self = .invalidLocation("\(location): TLS failed: \(underlying)")
      } else {
        self = .unreachable("\(location): \(underlying)")
      }
    }
  }

  /// Whether `underlying` says TLS itself failed (a certificate, a handshake), which a person
  /// must fix, rather than the connection: a ragged EOF (`uncleanShutdown`, the server gone
  /// without a close_notify, as at every stop of it) is the network's, and the server may
  /// come back.
  static func isTLSFailure(_ underlying: (any Error)?) -> Bool {
    if case .uncleanShutdown = underlying as? NIOSSLError { return false }
    return underlying is NIOSSLError || underlying is BoringSSLError
  }
}
