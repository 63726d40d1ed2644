/// Why a D-Bus exchange failed, as one line.
public enum BusError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The socket failed or the bus sent something unreadable.
  case io(String)
  /// The bus or the service answered with an error (its D-Bus name).
  case refused(String)
  /// No answer in time.
  case timedOut

  public var description: String {
    switch self {
    case .io(let reason): reason
    case .refused(let name): "refused: \(name)"
    case .timedOut: "no answer from the bus in time"
    }
  }
}
