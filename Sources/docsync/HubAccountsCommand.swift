import ArgumentParser
import Foundation
import Glibc
import Hub
import PostgresHub

/// `docsync hub accounts ADMIN-URL [--json]`.
struct HubAccountsCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "accounts", abstract: "List the accounts, their devices and their records.")

  @Argument(help: "postgres://ADMIN@HOST:PORT/DATABASE of a role that may read the hub.")
  var adminURL: String

  @Flag(help: "Print JSON for scripts: an array of {name, devices, records}.")
  var json = false

  func run() throws {
    let administration = try administrationOrFailure(adminURL)
    let accounts = try outcome { try await administration.accounts() }
    if json {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
      writeText(String(decoding: try encoder.encode(accounts), as: UTF8.self) + "\n", to: 1)
      return
    }
    if accounts.isEmpty { writeText("no accounts\n", to: 1) }
    for account in accounts {
      let devices = account.devices.isEmpty ? "no devices" : account.devices.joined(separator: ", ")
      writeText("\(account.name): \(account.records) records; \(devices)\n", to: 1)
    }
  }
}
