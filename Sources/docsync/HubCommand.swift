import ArgumentParser
import Foundation
import Glibc
import Hub
import PostgresHub

/// `docsync hub`: an administrator's commands for a PostgreSQL hub, run with a URL of a role
/// that may create roles and schemas (a superuser, or the database's owner with CREATEROLE).
struct HubCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "hub",
    abstract: "Administer a PostgreSQL hub: schema, accounts and device roles.",
    subcommands: [
      HubInitCommand.self, HubAddDeviceCommand.self, HubRemoveDeviceCommand.self,
      HubAccountsCommand.self,
    ])
}

func administrationOrFailure(_ adminURL: String) throws -> HubAdministration {
  do {
    return try HubAdministration(adminURL: adminURL)
  } catch {
    throw CommandFailure(error.description)
  }
}

/// Runs `work` to its end and turns its error into a one-line failure.
@discardableResult
func outcome<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
  let result: Result<T, CommandFailure> = waitFor {
    do {
      return .success(try await work())
    } catch let error as HubError {
      return .failure(CommandFailure(error.description))
    } catch {
      return .failure(CommandFailure("\(error)"))
    }
  }
  return try result.get()
}
