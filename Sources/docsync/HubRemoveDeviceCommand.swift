import ArgumentParser
import Foundation
import Glibc
import Hub
import PostgresHub

/// `docsync hub remove-device ADMIN-URL ROLE`.
struct HubRemoveDeviceCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "remove-device",
    abstract: "Drop a device's login role; what it synced stays in its account.")

  @Argument(help: "postgres://ADMIN@HOST:PORT/DATABASE of a role that may drop roles.")
  var adminURL: String

  @Argument(help: "The device's login role.")
  var role: String

  func run() throws {
    let administration = try administrationOrFailure(adminURL)
    try outcome { try await administration.removeDevice(role: role) }
    writeText("device role \(role) removed\n", to: 1)
  }
}
