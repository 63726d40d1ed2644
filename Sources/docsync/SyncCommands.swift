import ArgumentParser
import Foundation
import Glibc

/// A running docsync mount, found by its mount point.
struct RunningMount {
  let mountPoint: String
  let state: String

  init(_ path: String) throws {
    guard let target = resolvedPath(path) else {
      throw CommandFailure("mount point \(path) does not exist")
    }
    guard let record = MountTable.record(at: target), let state = record.docsyncState else {
      throw CommandFailure("\(target) is not a docsync mount")
    }
    mountPoint = target
    self.state = state
  }

  func request(_ line: String) throws -> String {
    try Control.request(line, state: state, mountPoint: mountPoint)
  }

  /// Every docsync mount of this user.
  static func all() -> [RunningMount] {
    MountTable.records().compactMap { record in
      guard let state = record.docsyncState, access(state, R_OK) == 0 else { return nil }
      return try? RunningMount(record.mountPoint)
    }
  }
}

/// `docsync sync`: push and pull now; return when the mount is up to date with the hub.
struct SyncCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "sync", abstract: "Sync a mount now and wait until it is up to date.")

  @Argument(help: "The mount point.")
  var mountPoint: String

  @Option(help: "Give up after this many seconds.")
  var timeout: Double = 60

  func run() throws {
    _ = try RunningMount(mountPoint).request("sync \(timeout)")
  }
}

/// `docsync pause`: stop syncing; the mount keeps working.
struct PauseCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "pause", abstract: "Stop syncing a mount (it keeps working).")

  @Argument(help: "The mount point.")
  var mountPoint: String

  func run() throws {
    _ = try RunningMount(mountPoint).request("pause")
  }
}

/// `docsync resume`: start syncing again.
struct ResumeCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "resume", abstract: "Start syncing a paused mount again.")

  @Argument(help: "The mount point.")
  var mountPoint: String

  func run() throws {
    _ = try RunningMount(mountPoint).request("resume")
  }
}

/// `docsync status`: where syncing stands and what is in conflict.
struct StatusCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "status", abstract: "Show sync state and every document in conflict.")

  @Argument(help: "The mount point (default: every docsync mount).")
  var mountPoint: String?

  @Flag(help: "Print JSON for scripts.")
  var json = false

  func run() throws {
    let mounts = try mountPoint.map { [try RunningMount($0)] } ?? RunningMount.all()
    var reports: [StatusReport] = []
    for mount in mounts {
      let payload = try mount.request("status")
      guard let report = try? JSONDecoder().decode(StatusReport.self, from: Data(payload.utf8))
      else {
        throw CommandFailure("the mount at \(mount.mountPoint) sent an unreadable status")
      }
      reports.append(report)
    }
    if json {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
      let data = try encoder.encode(mountPoint == nil ? AnyReports.many(reports) : .one(reports[0]))
      writeText(String(decoding: data, as: UTF8.self) + "\n", to: 1)
      return
    }
    if reports.isEmpty {
      writeText("no docsync mounts\n", to: 1)
      return
    }
    for report in reports {
      var lines = [report.mountPoint]
      lines.append("  device:    \(report.device)")
      lines.append("  hub:       \(report.hub)")
      var state = report.state
      if report.state == "offline" {
        state = "offline since \(report.offlineSince ?? "?") (\(report.offlineReason ?? ""))"
      } else if report.state == "pending" {
        state = "uploading \(report.pendingUploads) version(s)"
      }
      lines.append("  state:     \(state)")
      lines.append("  last sync: \(report.lastSync ?? "never")")
      if report.conflicts.isEmpty {
        lines.append("  conflicts: none")
      } else {
        lines.append("  conflicts: \(report.conflicts.count)")
        for conflict in report.conflicts {
          let plural = conflict.versions == 1 ? "version" : "versions"
          lines.append(
            "    \(conflict.path) (\(conflict.versions) \(plural) in .versions/\(conflict.path)/)")
        }
      }
      writeText(lines.joined(separator: "\n") + "\n", to: 1)
    }
  }

  /// One report for one mount, a list for all of them.
  enum AnyReports: Encodable {
    case one(StatusReport)
    case many([StatusReport])

    func encode(to encoder: any Encoder) throws {
      var container = encoder.singleValueContainer()
      switch self {
      case .one(let report): try container.encode(report)
      case .many(let reports): try container.encode(reports)
      }
    }
  }
}
