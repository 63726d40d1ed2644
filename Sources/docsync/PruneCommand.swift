import ArgumentParser
import Foundation

/// `docsync prune`: lets go now of the earlier versions that retention releases, on the hub and
/// on this device, and gives their space back.
struct PruneCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "prune",
    abstract: "Let go now of the earlier versions that retention releases, on the hub and here.")

  @Argument(help: "The mount point.")
  var mountPoint: String

  func run() throws {
    let mount = try RunningMount(mountPoint)
    let payload = try mount.request("prune")
    guard let summary = try? JSONDecoder().decode(PruneSummary.self, from: Data(payload.utf8))
    else {
      throw CommandFailure("the mount at \(mount.mountPoint) sent an unreadable prune report")
    }
    let versions =
      summary.versions == 1 ? "1 earlier version" : "\(summary.versions) earlier versions"
    let files = summary.files == 1 ? "1 content file" : "\(summary.files) content files"
    writeText(
      "pruned \(versions) and \(files) (\(byteCount(summary.bytes)) here); \(summary.policy)\n",
      to: 1)
  }
}
