import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A stand-in PostgreSQL server on loopback that offers no TLS and asks every client for its
/// password in cleartext, as a server with `password` in pg_hba.conf (or an attacker on the
/// path) does; it records every password it is sent and refuses them all. The first
/// `dropping` connections it closes at once, as a server that is restarting or a network that
/// resets does.
final class CleartextServer: Sendable {
  private let listener: LoopbackListener
  private let received: Received

  var port: Int { listener.port }

  /// The passwords clients sent.
  var passwords: [String] { received.passwords.withLock { $0 } }

  /// What the serving thread shares with the test: the server itself is not kept alive by it.
  private final class Received: Sendable {
    let passwords = Mutex<[String]>([])
    let clients = Mutex(0)
  }

  init(dropping: Int = 0) throws {
    let received = Received()
    self.received = received
    listener = try LoopbackListener { client in
      let drop = received.clients.withLock { count in
        defer { count += 1 }
        return count < dropping
      }
      if !drop { Self.serve(client, recording: received) }
    }
  }

  private static func serve(_ client: Int32, recording received: Received) {
    // The startup packet, after an SSLRequest answered with 'N' when the client sends one.
    guard var startup = readPacket(client, typed: false) else { return }
    if startup.count == 4 && startup == [0x04, 0xd2, 0x16, 0x2f] {
      _ = write(client, "N", 1)
      guard let next = readPacket(client, typed: false) else { return }
      startup = next
    }
    // AuthenticationCleartextPassword.
    let request: [UInt8] = [UInt8(ascii: "R"), 0, 0, 0, 8, 0, 0, 0, 3]
    _ = request.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
    guard let password = readPacket(client, typed: true) else { return }
    let text = String(decoding: password.prefix { $0 != 0 }, as: UTF8.self)
    received.passwords.withLock { $0.append(text) }
    var fields: [UInt8] = []
    for (code, value) in [
      ("S", "FATAL"), ("V", "FATAL"), ("C", "28P01"),
      ("M", "password authentication failed for user"),
    ] {
      fields += Array(code.utf8) + Array(value.utf8) + [0]
    }
    fields.append(0)
    let size = UInt32(fields.count + 4).bigEndian
    let error = [UInt8(ascii: "E")] + withUnsafeBytes(of: size) { Array($0) } + fields
    _ = error.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
    // Half-close and read what the client still sends: closing with unread bytes would reset
    // the connection, and a reset can reach the client before the error does.
    shutdown(client, Int32(SHUT_WR))
    var pending = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
    var sink = [UInt8](repeating: 0, count: 512)
    while poll(&pending, 1, 2000) > 0,
      sink.withUnsafeMutableBytes({ read(client, $0.baseAddress, $0.count) }) > 0
    {}
  }

  /// One protocol message's body: a type byte first when `typed`, then a big-endian length
  /// that counts itself.
  private static func readPacket(_ client: Int32, typed: Bool) -> [UInt8]? {
    guard let header = readExactly(client, typed ? 5 : 4) else { return nil }
    let lengthBytes = typed ? Array(header[1...4]) : header
    let length = lengthBytes.reduce(0) { $0 << 8 | Int($1) }
    guard length >= 4, length < 1 << 16 else { return nil }
    return readExactly(client, length - 4)
  }

  private static func readExactly(_ client: Int32, _ count: Int) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: count)
    var done = 0
    while done < count {
      let n = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress! + done, count - done) }
      if n <= 0 { return nil }
      done += n
    }
    return buffer
  }
}
