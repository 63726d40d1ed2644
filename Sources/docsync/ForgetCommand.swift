import ArgumentParser
import Foundation
import Hub

/// `docsync forget`: removes one document's whole history everywhere, for the file that should
/// never have been synced.
struct ForgetCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "forget",
    abstract: "Remove a document and every version of it, on every device and on the hub.",
    discussion: """
      For the file that should never have been synced. The document, its conflict versions \
      and its earlier versions (.history) go from the hub, records and content, and from \
      every device at its next sync round: its file, .versions and .history entries and \
      saved content. A device that was offline and edited the document keeps its edit: it \
      comes back as a new document. Other documents that share the content keep it. PATH is \
      a document in a mount (or its folder under .history, for a deleted one); a folder is \
      refused. It asks for confirmation on a terminal; --yes skips the question, and without \
      a terminal it is required.
      """)

  @Argument(help: "A document in a docsync mount, or its folder under .history.")
  var path: String

  @Flag(name: .shortAndLong, help: "Do not ask for confirmation.")
  var yes = false

  func run() throws {
    let (mount, relative) = try VersionsCommand.locate(path)
    if !yes {
      guard isatty(0) == 1 else {
        throw CommandFailure(
          "refusing to forget \(mount.mountPoint)/\(relative) without confirmation: "
            + "run it on a terminal, or give --yes")
      }
      writeText(
        "Forget \(mount.mountPoint)/\(relative) and every version of it, on every device and "
          + "on the hub? This cannot be undone. [y/N] ", to: 1)
      let answer = Swift.readLine() ?? ""
      guard ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
      else {
        throw CommandFailure("nothing forgotten")
      }
    }
    let payload = try mount.request("forget " + hexString(Array(relative.utf8)))
    let count = Int(payload.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    writeText(
      "forgot \(mount.mountPoint)/\(relative): \(count) version\(count == 1 ? "" : "s"), "
        + "on the hub and here; other devices drop it at their next sync\n", to: 1)
  }
}
