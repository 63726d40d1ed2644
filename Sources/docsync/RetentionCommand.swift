import ArgumentParser
import DocumentModel
import Foundation

/// `docsync retention`: shows or sets how long the library keeps earlier versions. The setting
/// lives on the hub, so every device of the library applies the same.
struct RetentionCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "retention",
    abstract:
      "Show or set how long the library keeps earlier versions (on the hub, for every device).",
    discussion: """
      The default is --staggered: for the first hour one version per 30 seconds, for the first \
      day one per hour, then one per day up to 30 days. --keep 0 keeps no earlier version: \
      only current documents and conflict versions. Pruning runs on each mount once a day, \
      or now with `docsync prune`.
      """)

  @Argument(help: "The mount point.")
  var mountPoint: String

  @Option(help: "Keep every earlier version this long: 0, 90s, 15m, 12h, 30d or 2w.")
  var keep: String?

  @Flag(help: "Staggered retention, bounded to 30 days (the default).")
  var staggered = false

  func validate() throws {
    if keep != nil && staggered { throw ValidationError("give --keep or --staggered, not both") }
    if let keep, RetentionPolicy.milliseconds(parsing: keep) == nil {
      throw ValidationError("--keep: a duration such as 0, 90s, 15m, 12h, 30d or 2w, not \(keep)")
    }
  }

  func run() throws {
    var request = "retention"
    if staggered { request += " " + RetentionPolicy.staggered.serialized }
    if let keep, let milliseconds = RetentionPolicy.milliseconds(parsing: keep) {
      request += " " + RetentionPolicy.keep(milliseconds: milliseconds).serialized
    }
    let mount = try RunningMount(mountPoint)
    let payload = try mount.request(request)
    let setting = payload.trimmingCharacters(in: .whitespacesAndNewlines)
    writeText("retention of \(mount.mountPoint): \(setting)\n", to: 1)
  }
}
