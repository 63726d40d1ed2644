import Glibc

/// Where a D-Bus session bus listens: a Unix socket by path or in the abstract namespace.
public struct BusAddress: Equatable, Sendable, CustomStringConvertible {
  public enum Socket: Equatable, Sendable {
    case path(String)
    case abstract(String)
  }

  public let socket: Socket

  public init(socket: Socket) { self.socket = socket }

  public var description: String {
    switch socket {
    case .path(let path): "unix:path=\(path)"
    case .abstract(let name): "unix:abstract=\(name)"
    }
  }

  /// The first usable entry of a D-Bus address list (`unix:path=/run/user/1000/bus;...`);
  /// nil when none is a Unix socket this client can reach.
  public init?(parsing text: String) {
    for entry in text.split(separator: ";") {
      guard let colon = entry.firstIndex(of: ":"), entry[..<colon] == "unix" else { continue }
      var values: [String: String] = [:]
      for pair in entry[entry.index(after: colon)...].split(separator: ",") {
        guard let equals = pair.firstIndex(of: "="),
          let value = Self.unescaped(pair[pair.index(after: equals)...])
        else { continue }
        values[String(pair[..<equals])] = value
      }
      if let path = values["path"] {
        socket = .path(path)
        return
      }
      if let name = values["abstract"] {
        socket = .abstract(name)
        return
      }
    }
    return nil
  }

  /// The session bus of this process: `DBUS_SESSION_BUS_ADDRESS`, else the user's bus socket in
  /// `XDG_RUNTIME_DIR` (or `/run/user/<uid>`) when it exists, as systemd's user session makes it.
  public static func session(environment: [String: String]) -> BusAddress? {
    if let text = environment["DBUS_SESSION_BUS_ADDRESS"], !text.isEmpty {
      return BusAddress(parsing: text)
    }
    let runtime = environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 }
    let path = (runtime ?? "/run/user/\(getuid())") + "/bus"
    var info = stat()
    guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return nil }
    return BusAddress(socket: .path(path))
  }

  /// `%xx` escapes of D-Bus address values decoded; nil when malformed.
  private static func unescaped(_ text: Substring) -> String? {
    var bytes: [UInt8] = []
    var iterator = Array(text.utf8).makeIterator()
    while let byte = iterator.next() {
      guard byte == UInt8(ascii: "%") else {
        bytes.append(byte)
        continue
      }
      guard let high = iterator.next(), let low = iterator.next(),
        let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
      else { return nil }
      bytes.append(value)
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}
