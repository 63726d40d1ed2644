import Foundation
import Hub
import PostgresNIO

/// A parsed `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE?sslmode=...` hub location.
///
/// Follows libpq where it matters to a user moving a connection string between tools: the same
/// `sslmode` values with the same meaning, `sslrootcert`, the database defaulting to the user
/// name, and the password taken from the URL, else `PGPASSWORD`, else the password file
/// (`PGPASSFILE`, by default `~/.pgpass`).
public struct PostgresLocation: Sendable, Equatable {
  /// How much TLS the connection insists on, as libpq's `sslmode` says it.
  public enum SSLMode: String, Sendable, CaseIterable {
    case disable, allow, prefer, require
    case verifyCA = "verify-ca"
    case verifyFull = "verify-full"
  }

  public var host: String
  public var port: Int
  public var user: String
  public var password: String?
  public var database: String
  public var sslMode: SSLMode
  /// The CA certificates that `verify-ca` and `verify-full` trust; nil when none is named.
  public var sslRootCertificate: String?
  /// `sslrootcert=system`: trust the system's roots, as libpq 16 spells it.
  public var trustsSystemRoots = false

  static let knownParameters: Set<String> = ["sslmode", "sslrootcert", "application_name"]

  /// Parses `location`, reading the environment and password file for a password it lacks.
  public init(
    parsing location: String,
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(HubError) {
    guard let components = URLComponents(string: location),
      let scheme = components.scheme?.lowercased(), ["postgres", "postgresql"].contains(scheme)
    else {
      throw .invalidLocation("\(Self.redacted(location)) is not a postgres:// URL")
    }
    guard let host = components.host, !host.isEmpty else {
      throw .invalidLocation("\(Self.redacted(location)) names no host")
    }
    guard let user = components.user, !user.isEmpty else {
      throw .invalidLocation(
        "\(Self.redacted(location)) names no user; write postgres://USER@\(host)/DATABASE")
    }
    // URLComponents keeps host brackets for IPv6; NIO wants the bare address.
    self.host =
      host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    port = components.port ?? 5432
    guard (1...65535).contains(port) else {
      throw .invalidLocation("port \(port) in \(Self.redacted(location)) is out of range")
    }
    self.user = user
    let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : ""
    database = path.isEmpty ? user : path
    guard !database.contains("/") else {
      throw .invalidLocation("\"\(database)\" in \(Self.redacted(location)) is not a database name")
    }

    // Unlike libpq's prefer, which neither insists on TLS nor checks who answers: a hub
    // carries every document and a password, so anything weaker is written in the URL.
    var mode = SSLMode.verifyFull
    var rootCertificate: String?
    var systemRoots = false
    for item in components.queryItems ?? [] {
      guard Self.knownParameters.contains(item.name) else {
        throw .invalidLocation(
          "unknown parameter \"\(item.name)\" in \(Self.redacted(location)); "
            + "docsync knows sslmode and sslrootcert")
      }
      let value = item.value ?? ""
      switch item.name {
      case "sslmode":
        guard let parsed = SSLMode(rawValue: value) else {
          throw .invalidLocation(
            "sslmode=\(value) is not one of "
              + SSLMode.allCases.map(\.rawValue).joined(separator: ", "))
        }
        mode = parsed
      case "sslrootcert":
        systemRoots = value == "system"
        rootCertificate = systemRoots ? nil : value
      default:
        break
      }
    }
    sslMode = mode
    let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
    if rootCertificate == nil, [.verifyCA, .verifyFull].contains(mode),
      components.queryItems?.contains(where: { $0.name == "sslrootcert" }) != true
    {
      // libpq's default trust file; without it, connecting fails as it does with libpq.
      let standard = home + "/.postgresql/root.crt"
      if FileManager.default.fileExists(atPath: standard) { rootCertificate = standard }
    }
    sslRootCertificate = rootCertificate
    trustsSystemRoots = systemRoots

    if let given = components.password {
      password = given
    } else if let fromEnvironment = environment["PGPASSWORD"] {
      password = fromEnvironment
    } else {
      let file = environment["PGPASSFILE"] ?? home + "/.pgpass"
      password = Self.passwordFromFile(
        file, host: self.host, port: port, database: database, user: user)
    }
  }

  /// What a person should know before syncing through this location: `sslmode=disable` to a
  /// host that is not this machine sends the documents, and a cleartext password, in the clear.
  public var warning: String? {
    guard sslMode == .disable, !Self.isLoopback(host) else { return nil }
    return "sslmode=disable: every document crosses the network to \(host) unencrypted"
  }

  static func isLoopback(_ host: String) -> Bool {
    host == "localhost" || host == "::1" || host.hasPrefix("127.") || host.hasPrefix("/")
  }

  /// The location with any password replaced, fit for messages and logs.
  public var description: String {
    "postgres://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
      + "?sslmode=\(sslMode.rawValue)"
  }

  static func redacted(_ location: String) -> String {
    guard var components = URLComponents(string: location), components.password != nil else {
      return location
    }
    components.password = "***"
    return components.string ?? "the location"
  }

  /// The first matching line of a libpq password file, `host:port:database:user:password`, where
  /// `*` matches anything and `\` escapes `:` and `\`.
  ///
  /// Like libpq, a file that its group or others may read is ignored: it is not a secret then.
  static func passwordFromFile(
    _ path: String, host: String, port: Int, database: String, user: String
  ) -> String? {
    var info = stat()
    guard stat(path, &info) == 0, info.st_mode & 0o077 == 0,
      let text = try? String(contentsOfFile: path, encoding: .utf8)
    else { return nil }
    let wanted = [host, String(port), database, user]
    for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
      var fields: [String] = [""]
      var escaped = false
      for character in line {
        if escaped {
          fields[fields.count - 1].append(character)
          escaped = false
        } else if character == "\\" {
          escaped = true
        } else if character == ":" && fields.count < 5 {
          fields.append("")
        } else {
          fields[fields.count - 1].append(character)
        }
      }
      guard fields.count == 5 else { continue }
      let matches = zip(fields.prefix(4), wanted).allSatisfy { field, value in
        field == "*" || field == value
          || (field == "localhost" && (value == "127.0.0.1" || value == "::1"))
      }
      if matches { return fields[4] }
    }
    return nil
  }

  /// The connection settings postgres-nio wants, with TLS as `sslmode` asks.
  func connectionConfiguration() throws(HubError) -> PostgresConnection.Configuration {
    let tls: PostgresConnection.Configuration.TLS
    do {
      switch sslMode {
      case .disable:
        tls = .disable
      case .allow, .prefer, .require:
        // libpq's require encrypts but does not verify: anyone on the path can pose as the
        // server. verify-full is the mode that authenticates it.
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        let context = try NIOSSLContext(configuration: configuration)
        tls = sslMode == .require ? .require(context) : .prefer(context)
      case .verifyCA, .verifyFull:
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification =
          sslMode == .verifyFull ? .fullVerification : .noHostnameVerification
        if let sslRootCertificate {
          configuration.trustRoots = .file(sslRootCertificate)
          _ = try NIOSSLCertificate.fromPEMFile(sslRootCertificate)
        } else if !trustsSystemRoots {
          throw HubError.invalidLocation(
            "sslmode=\(sslMode.rawValue) needs the CA that signed the server's certificate: put it "
              + "in ~/.postgresql/root.crt or name it with sslrootcert=FILE "
              + "(sslrootcert=system trusts the system's roots)")
        }
        tls = .require(try NIOSSLContext(configuration: configuration))
      }
    } catch let error as HubError {
      throw error
    } catch {
      throw .invalidLocation(
        "cannot set up TLS for \(description): \(oneLine(String(describing: error)))")
    }
    var configuration = PostgresConnection.Configuration(
      host: host, port: port, username: user, password: password, database: database, tls: tls)
    configuration.options.connectTimeout = .seconds(5)
    // No tlsServerName: postgres-nio then sends the host name for SNI, or for an IP address none,
    // and NIOSSL checks the certificate against the name, or against the peer's address.
    return configuration
  }
}

/// Joins the lines of an error's text, so that every HubError stays one line.
func oneLine(_ text: String) -> String {
  text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
    .joined(separator: " ")
}
