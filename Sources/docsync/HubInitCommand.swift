import ArgumentParser
import Foundation
import Glibc
import Hub
import PostgresHub

/// `docsync hub init ADMIN-URL`.
struct HubInitCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "init", abstract: "Apply or upgrade the hub's schema in the database.")

  @Argument(help: "postgres://ADMIN@HOST:PORT/DATABASE of a role that may create schemas.")
  var adminURL: String

  func run() throws {
    let administration = try administrationOrFailure(adminURL)
    let step = try outcome { try await administration.initialize() }
    writeText("the hub's schema is at step \(step)\n", to: 1)
  }
}
