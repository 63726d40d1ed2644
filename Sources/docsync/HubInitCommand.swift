import ArgumentParser
import Foundation
import Glibc
import Hub
import PostgresHub
import Synchronization

/// `docsync hub init ADMIN-URL` (or a SQLite hub file).
struct HubInitCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "init",
    abstract: "Apply or upgrade the hub's schema, then cut old blobs into chunks.")

  @Argument(
    help: """
      postgres://ADMIN@HOST:PORT/DATABASE of a role that may create schemas, or the path of a \
      SQLite hub file (upgraded and converted now, as its mounts do in the background).
      """)
  var adminURL: String

  func run() throws {
    if !adminURL.contains("://") {
      try convertSQLite()
      return
    }
    let administration = try administrationOrFailure(adminURL)
    let step = try outcome { try await administration.initialize() }
    writeText("the hub's schema is at step \(step)\n", to: 1)
    // Then the blobs of versions made before chunks, batch by batch: a run stopped anywhere
    // loses nothing, and the next one goes on.
    let total = try outcome { () async throws -> TwinBatch in
      let shown = Mutex(0)
      return try await administration.convertBlobs { total in
        guard
          shown.withLock({ shown in
            defer { shown = total.converted }
            return total.converted > shown
          })
        else { return }
        writeText(
          "converted \(total.converted) blob(s), \(total.bytes) bytes, into chunks\n", to: 1)
      }
    }
    report(total)
  }

  private func report(_ total: TwinBatch) {
    writeText(
      """
      \(total.converted) blob(s) converted into chunks\
      \(total.damaged > 0 ? ", \(total.damaged) damaged left for repair" : "")\
      \(total.skipped > 0 ? ", \(total.skipped) changed meanwhile, left for a later run" : "")

      """, to: 1)
  }

  /// Opens the file (which runs its schema steps) and converts every blob records name.
  private func convertSQLite() throws {
    let hub: SQLiteHub
    do {
      hub = try SQLiteHub(path: adminURL)
    } catch {
      throw CommandFailure(error.description)
    }
    let total = try outcome { () async throws -> TwinBatch in
      var shown = 0
      return try await hub.convertAllBlobs { total in
        guard total.converted > shown else { return }
        shown = total.converted
        writeText(
          "converted \(total.converted) blob(s), \(total.bytes) bytes, into chunks\n", to: 1)
      }
    }
    writeText("the hub file is upgraded\n", to: 1)
    report(total)
  }
}
