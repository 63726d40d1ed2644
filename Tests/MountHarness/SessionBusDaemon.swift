import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A private session D-Bus (`dbus-daemon --session`) and a `dbus-monitor` watching every message
/// on it, for the lifetime of the value: tests see exactly what docsync sent to the bus.
public final class SessionBusDaemon {
  /// `DBUS_SESSION_BUS_ADDRESS` of the private bus.
  public let address: String
  private let daemon: BackgroundProcess
  private let monitor: BackgroundProcess

  public init() throws {
    try TestEnvironment.require(programs: ["dbus-daemon", "dbus-monitor"], fuse: false)
    daemon = try BackgroundProcess(["dbus-daemon", "--session", "--nofork", "--print-address=1"])
    try daemon.waitForOutput("\n", timeout: .seconds(20))
    address = daemon.output.split(separator: "\n").first.map(String.init) ?? ""
    monitor = try BackgroundProcess(["dbus-monitor", "--address", address])
    // The monitor's own connection shows up in its output once it watches.
    try monitor.waitForOutput("NameAcquired", timeout: .seconds(20))
  }

  /// Everything the monitor printed so far.
  public var messages: String { monitor.output }

  /// Waits until the monitor printed a method call of `member`, followed by every string in
  /// `containing`; returns that call's text.
  @discardableResult
  public func waitForCall(
    _ member: String, containing: [String] = [], timeout: Duration = .seconds(20)
  ) throws -> String {
    let deadline = ContinuousClock.now + timeout
    while true {
      if let call = calls(member).first(where: { call in containing.allSatisfy(call.contains) }) {
        return call
      }
      guard ContinuousClock.now < deadline else {
        throw RunError(
          description: "no \(member) call with \(containing) on the session bus:\n\(messages)")
      }
      usleep(20_000)
    }
  }

  /// The text of each method call of `member` the monitor saw, with its arguments.
  public func calls(_ member: String) -> [String] {
    // dbus-monitor starts each message with a line at column 0; arguments are indented.
    var calls: [String] = []
    var current: String?
    for line in messages.split(separator: "\n", omittingEmptySubsequences: false) {
      if !line.hasPrefix(" ") {
        if let current { calls.append(current) }
        current = line.hasPrefix("method call") && line.contains("member=\(member)") ? "" : nil
      }
      if current != nil { current! += line + "\n" }
    }
    if let current { calls.append(current) }
    return calls
  }

  deinit {
    kill(monitor.pid, SIGTERM)
    kill(daemon.pid, SIGTERM)
    _ = try? monitor.wait(timeout: .seconds(5))
    _ = try? daemon.wait(timeout: .seconds(5))
  }
}
