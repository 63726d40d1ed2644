import MountHarness
import SessionBus
import Testing

/// docsync's D-Bus client against a real `dbus-daemon --session`.
@Suite("Session bus client")
struct SessionBusTests {
  @Test("Addresses: path, abstract, escapes, the first usable entry; garbage is refused")
  func parsesAddresses() {
    #expect(
      BusAddress(parsing: "unix:path=/run/user/1000/bus")?.socket == .path("/run/user/1000/bus"))
    #expect(
      BusAddress(parsing: "unix:abstract=/tmp/dbus-X,guid=abc")?.socket == .abstract("/tmp/dbus-X"))
    #expect(BusAddress(parsing: "unix:path=/tmp/a%20b")?.socket == .path("/tmp/a b"))
    #expect(
      BusAddress(parsing: "tcp:host=localhost,port=1;unix:path=/x")?.socket == .path("/x"))
    #expect(BusAddress(parsing: "tcp:host=localhost,port=1") == nil)
    #expect(BusAddress(parsing: "unix:path=/tmp/%zz") == nil)
    #expect(BusAddress(parsing: "") == nil)
  }

  @Test("A notification reaches the bus with every argument; the missing server is an error")
  func notifyReachesTheBus() throws {
    let bus = try SessionBusDaemon()
    let address = try #require(BusAddress(parsing: bus.address))
    let connection = try BusConnection(address: address)
    #expect(connection.uniqueName.hasPrefix(":"))
    let notification = DesktopNotification(
      appName: "docsync", icon: "dialog-warning", summary: "Conflict in plan.md",
      body: "plan.md was changed on laptop and desktop — ünïcode too")
    // No notification server runs on this private bus: the bus answers for it.
    #expect(throws: BusError.refused("org.freedesktop.DBus.Error.ServiceUnknown")) {
      try notification.send(on: connection)
    }
    let call = try bus.waitForCall(
      "Notify",
      containing: [
        "interface=org.freedesktop.Notifications", "string \"docsync\"", "uint32 0",
        "string \"dialog-warning\"", "string \"Conflict in plan.md\"",
        "string \"plan.md was changed on laptop and desktop — ünïcode too\"", "string \"urgency\"",
        "variant             byte 1", "int32 -1",
      ])
    #expect(call.contains("destination=org.freedesktop.Notifications"), "\(call)")
  }

  @Test("No bus at the address: a clear error, no hang")
  func missingBus() {
    #expect(throws: BusError.self) {
      try BusConnection(address: BusAddress(socket: .path("/nonexistent/docsync-test-bus")))
    }
  }
}
