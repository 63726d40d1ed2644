/// A freedesktop desktop notification (`org.freedesktop.Notifications.Notify`).
public struct DesktopNotification: Equatable, Sendable {
  public var appName: String
  public var icon: String
  public var summary: String
  public var body: String

  public init(appName: String, icon: String, summary: String, body: String) {
    self.appName = appName
    self.icon = icon
    self.summary = summary
    self.body = body
  }

  /// The arguments of `Notify` (`susssasa{sv}i`): no actions, normal urgency, the server's
  /// default expiry.
  public var arguments: [BusValue] {
    [
      .string(appName), .uint32(0), .string(icon), .string(summary), .string(body),
      .array(elementSignature: "s", []),
      .array(elementSignature: "{sv}", [.dictEntry(.string("urgency"), .variant(.byte(1)))]),
      .int32(-1),
    ]
  }

  /// Shows it through the notification server on `connection`'s bus.
  public func send(on connection: BusConnection) throws(BusError) {
    try connection.call(
      destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
      interface: "org.freedesktop.Notifications", member: "Notify", body: arguments)
  }
}
