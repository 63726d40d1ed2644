import ArgumentParser
import Foundation
import Glibc
import Synchronization

/// `docsync events`: a stream of what happens in a mount, one line per event, for scripts and
/// status bars.
struct EventsCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "events",
    abstract: "Print conflicts, resolutions, merges, going offline and back, versions that "
      + "cannot be uploaded, refused records and finished transfers as they happen.")

  @Argument(help: "The mount point (default: every docsync mount of this user).")
  var mountPoint: String?

  @Flag(help: "Print one JSON object per line, for scripts.")
  var json = false

  @Option(
    help: ArgumentHelp(
      "First print the kept events after this sequence number (0: all kept), then stream.",
      valueName: "sequence"))
  var after: UInt64?

  func run() throws {
    let mounts = try mountPoint.map { [try RunningMount($0)] } ?? RunningMount.all()
    guard !mounts.isEmpty else { throw CommandFailure("no docsync mounts") }
    let request = "events" + (after.map { " \($0)" } ?? "")
    let json = self.json
    // Lines of several mounts must not interleave mid-line.
    let output = Mutex(())
    let failures = Mutex([String]())
    let group = DispatchGroup()
    for mount in mounts {
      group.enter()
      Thread.detachNewThread {
        defer { group.leave() }
        do {
          try Control.stream(request, state: mount.state, mountPoint: mount.mountPoint) { line in
            let text: String
            if json {
              text = line
            } else if let report = try? JSONDecoder().decode(
              EventReport.self, from: Data(line.utf8))
            {
              text = report.text
            } else {
              return true
            }
            output.withLock { _ in writeText(text + "\n", to: 1) }
            return true
          }
          failures.withLock { $0.append("the mount at \(mount.mountPoint) stopped") }
        } catch {
          let message = (error as? CommandFailure)?.message ?? "\(error)"
          failures.withLock { $0.append(message) }
        }
      }
    }
    group.wait()
    // Every stream ended: each mount stopped (or could not be reached).
    let reasons = failures.withLock { $0 }
    throw CommandFailure(reasons.joined(separator: "; "))
  }
}
