import Hub
import PostgresNIO

/// Opens connections that never send the password where anyone on the path could read it.
///
/// postgres-nio answers a server that asks for the password in cleartext by sending it, and
/// cannot be told not to. With TLS that is safe. Without it, a first connection without a
/// password tells what the server asks for: SCRAM and MD5 stop before anything is sent
/// ("requires a password"), a cleartext request is answered with an empty password that the
/// server refuses. Any other outcome keeps the password back.
///
/// `allow` and `prefer` try TLS first, and a connection that tried it never falls back on its
/// own: only the server's own "no TLS here" answer leads to a connection without it, and that
/// one is checked as `disable` is. A probe that times out or is reset therefore proves nothing
/// and sends nothing.
actor PasswordSafeConnector {
  let configuration: PostgresConnection.Configuration
  let description: String
  /// Whether the server was seen not to ask for the password in cleartext without TLS.
  private var plainIsSafe = false

  init(configuration: PostgresConnection.Configuration, description: String) {
    self.configuration = configuration
    self.description = description
  }

  func connect(id: Int) async throws(HubError) -> PostgresConnection {
    guard configuration.password != nil, !configuration.tls.isEnforced else {
      return try await open(configuration, id: id)
    }
    if configuration.tls.isAllowed, let context = configuration.tls.sslContext {
      var encrypted = configuration
      encrypted.tls = .require(context)
      do {
        return try await PostgresConnection.connect(
          configuration: encrypted, id: id, logger: Connections.logger)
      } catch let error as PSQLError where error.code == .sslUnsupported {
        // The server said it has no TLS: go on as sslmode=disable would.
      } catch {
        throw HubError(postgres: error, location: description)
      }
    }
    var plain = configuration
    plain.tls = .disable
    if !plainIsSafe {
      try await refuseCleartextPassword(plain)
      plainIsSafe = true
    }
    return try await open(plain, id: id)
  }

  private func open(
    _ configuration: PostgresConnection.Configuration, id: Int
  ) async throws(HubError) -> PostgresConnection {
    do {
      return try await PostgresConnection.connect(
        configuration: configuration, id: id, logger: Connections.logger)
    } catch {
      throw HubError(postgres: error, location: description)
    }
  }

  private func refuseCleartextPassword(
    _ plain: PostgresConnection.Configuration
  ) async throws(HubError) {
    var probe = plain
    probe.password = nil
    do {
      let connection = try await PostgresConnection.connect(
        configuration: probe, id: 0, logger: Connections.logger)
      closeInBackground(connection)
    } catch let error as PSQLError
      where error.code == .server && error.serverInfo?[.sqlState] == "28P01"
    {
      throw .invalidLocation(
        "\(description): the server asks for the password in cleartext on a connection without "
          + "TLS; use sslmode=verify-full, or have the server use scram-sha-256")
    } catch let error as PSQLError where error.code == .authMechanismRequiresPassword {
      return  // SCRAM or MD5: nothing is sent in the clear
    } catch {
      // Anything else (refused, reset, a mechanism postgres-nio lacks) did not show that the
      // password is safe to send, so it is not sent: the person sees this failure, as the
      // real connection would report it, and the next connection asks again.
      throw HubError(postgres: error, location: description)
    }
  }
}
