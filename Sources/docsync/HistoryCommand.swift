import ArgumentParser
import Foundation
import Hub

/// `docsync history`: a document's versions over time, who saved each and when, and the
/// command that restores each.
struct HistoryCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "history",
    abstract: "Show every kept version of one document, deleted or not, and how to restore each.")

  @Argument(
    help: "A document in a docsync mount, or its folder under .history (deleted documents too).")
  var path: String

  @Flag(help: "Print JSON for scripts.")
  var json = false

  func run() throws {
    let (mount, relative) = try VersionsCommand.locate(path)
    let payload = try mount.request("history " + hexString(Array(relative.utf8)))
    guard let report = try? JSONDecoder().decode(HistoryReport.self, from: Data(payload.utf8))
    else {
      throw CommandFailure("the mount at \(mount.mountPoint) sent an unreadable history")
    }
    if json {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
      writeText(String(decoding: try encoder.encode(report), as: UTF8.self) + "\n", to: 1)
      return
    }
    let count = report.versions.count
    var lines = ["\(report.mountPoint)/\(report.path): \(count) version\(count == 1 ? "" : "s")"]
    let width = report.versions.map { $0.device.count }.max() ?? 0
    for version in report.versions {
      let device = version.device.padding(toLength: width, withPad: " ", startingAt: 0)
      let state = version.state.padding(toLength: 8, withPad: " ", startingAt: 0)
      var line = "  \(state) \(version.modified)  \(device)"
      if let size = version.size { line += "  " + byteCount(size) }
      if let name = version.name { line += "  \(name)" }
      lines.append(line)
      if let command = version.command { lines.append("           restore: \(command)") }
    }
    writeText(lines.joined(separator: "\n") + "\n", to: 1)
  }
}
