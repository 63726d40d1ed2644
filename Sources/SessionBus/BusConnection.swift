import Glibc

/// A connection to a D-Bus bus over a Unix socket, authenticated as this user (EXTERNAL) and
/// named by the bus (`Hello`). Used from one thread at a time.
public final class BusConnection {
  private let fd: Int32
  private var nextSerial: UInt32 = 1
  private var received: [UInt8] = []
  /// The unique name the bus gave this connection (`:1.42`).
  public private(set) var uniqueName = ""

  /// Connects, authenticates and says hello; each step waits at most `timeoutMilliseconds`.
  public init(address: BusAddress, timeoutMilliseconds: Int32 = 2000) throws(BusError) {
    fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .io("socket: \(String(cString: strerror(errno)))") }
    // Every property is set from here on, so a throw below runs deinit, which closes `fd`.
    try connect(to: address)
    try authenticate(timeoutMilliseconds)
    let hello = BusMessage.call(
      serial: takeSerial(), destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
      interface: "org.freedesktop.DBus", member: "Hello")
    try send(hello)
    let reply = try awaitReply(to: hello.serial, timeoutMilliseconds: timeoutMilliseconds)
    if let error = reply.errorName { throw .refused(error) }
    // Messages to this connection carry its unique name as their destination.
    uniqueName = reply.destination ?? ""
  }

  deinit { if fd >= 0 { close(fd) } }

  /// Calls a method and waits for its answer; throws ``BusError/refused(_:)`` with the error's
  /// name when the call fails (no such service, no such method).
  public func call(
    destination: String, path: String, interface: String, member: String, body: [BusValue],
    timeoutMilliseconds: Int32 = 2000
  ) throws(BusError) {
    let message = BusMessage.call(
      serial: takeSerial(), destination: destination, path: path, interface: interface,
      member: member, body: body)
    try send(message)
    let reply = try awaitReply(to: message.serial, timeoutMilliseconds: timeoutMilliseconds)
    if reply.kind == .error { throw .refused(reply.errorName ?? "an unnamed error") }
  }

  private func takeSerial() -> UInt32 {
    defer { nextSerial &+= 1 }
    return nextSerial
  }

  private func connect(to address: BusAddress) throws(BusError) {
    var socketAddress = sockaddr_un()
    socketAddress.sun_family = sa_family_t(AF_UNIX)
    let (name, abstract): (String, Bool) =
      switch address.socket {
      case .path(let path): (path, false)
      case .abstract(let name): (name, true)
      }
    let utf8 = Array(name.utf8)
    let capacity = MemoryLayout.size(ofValue: socketAddress.sun_path)
    let offset = abstract ? 1 : 0
    guard utf8.count + offset < capacity else { throw .io("bus address too long: \(address)") }
    withUnsafeMutableBytes(of: &socketAddress.sun_path) { raw in
      for (index, byte) in utf8.enumerated() { raw[index + offset] = byte }
    }
    // An abstract name's length is exactly its bytes after the leading NUL.
    let length =
      abstract
      ? socklen_t(MemoryLayout<sa_family_t>.size + 1 + utf8.count)
      : socklen_t(MemoryLayout<sockaddr_un>.size)
    let connected = withUnsafePointer(to: &socketAddress) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
    }
    guard connected == 0 else {
      throw .io("cannot connect to \(address): \(String(cString: strerror(errno)))")
    }
  }

  private func authenticate(_ timeoutMilliseconds: Int32) throws(BusError) {
    // The bus learns who this is from the socket's credentials; the identity must match them.
    let identity = Array(String(getuid()).utf8).map { byte in
      let digits = Array("0123456789abcdef".utf8)
      return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]], as: UTF8.self)
    }.joined()
    try write([0] + Array("AUTH EXTERNAL \(identity)\r\n".utf8))
    let answer = try readLine(timeoutMilliseconds)
    guard answer.hasPrefix("OK ") else { throw .refused("authentication: \(answer)") }
    try write(Array("BEGIN\r\n".utf8))
  }

  private func send(_ message: BusMessage) throws(BusError) {
    try write(message.encoded())
  }

  private func write(_ bytes: [UInt8]) throws(BusError) {
    var remaining = bytes[...]
    while !remaining.isEmpty {
      let n = remaining.withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { throw .io("write to the bus: \(String(cString: strerror(errno)))") }
      remaining = remaining.dropFirst(n)
    }
  }

  /// Reads more bytes into `received`, waiting at most `timeoutMilliseconds`.
  private func fill(_ timeoutMilliseconds: Int32) throws(BusError) {
    var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    var ready: Int32
    repeat { ready = poll(&waiting, 1, timeoutMilliseconds) } while ready < 0 && errno == EINTR
    guard ready > 0 else { throw .timedOut }
    var buffer = [UInt8](repeating: 0, count: 4096)
    var n: Int
    repeat {
      n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    } while n < 0 && errno == EINTR
    guard n > 0 else { throw .io("the bus closed the connection") }
    received += buffer[0..<n]
  }

  private func readLine(_ timeoutMilliseconds: Int32) throws(BusError) -> String {
    while true {
      if let end = received.firstIndex(of: UInt8(ascii: "\n")) {
        let line = String(decoding: received[..<end], as: UTF8.self)
        received.removeSubrange(...end)
        return line.trimmingCharacters(in: "\r")
      }
      guard received.count < 16384 else { throw .io("an over-long line from the bus") }
      try fill(timeoutMilliseconds)
    }
  }

  /// The method return or error answering `serial`; signals and other messages are skipped.
  private func awaitReply(to serial: UInt32, timeoutMilliseconds: Int32) throws(BusError)
    -> BusMessage
  {
    while true {
      if received.count >= 16 {
        guard let length = BusMessage.length(ofMessageStartingWith: received),
          length <= 128 * 1024 * 1024
        else { throw .io("a malformed message from the bus") }
        if received.count >= length {
          let bytes = Array(received[..<length])
          received.removeSubrange(..<length)
          guard let message = BusMessage(decodingHeaderOf: bytes) else {
            throw .io("a malformed message header from the bus")
          }
          if message.replySerial == serial
            && (message.kind == .methodReturn || message.kind == .error)
          {
            return message
          }
          continue
        }
      }
      try fill(timeoutMilliseconds)
    }
  }
}

extension String {
  fileprivate func trimmingCharacters(in character: Character) -> String {
    var text = Substring(self)
    while text.last == character { text = text.dropLast() }
    return String(text)
  }
}
