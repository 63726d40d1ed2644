import ArgumentParser
import Foundation
import Hub

/// `docsync forget`: removes a document's whole history everywhere (or every document's in a
/// folder), for the file that should never have been synced.
struct ForgetCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "forget",
    abstract:
      "Remove a document (or every document in a folder) and every version of it, on every "
      + "device and on the hub.",
    discussion: """
      For the file that should never have been synced. The document, its conflict versions \
      and its earlier versions (.history) go from the hub, records and content, and from \
      every device at its next sync round: its file, .versions and .history entries and \
      saved content. A device that was offline and edited the document keeps its edit: it \
      comes back as a new document. Other documents that share the content keep it. PATH is \
      a document in a mount (or its folder under .history, for a deleted one), or a folder: \
      then every document under it, current or deleted, is forgotten, and the folders stay, \
      empty (rmdir deletes one everywhere as usual). It asks for confirmation on a terminal; \
      --yes skips the question, and without a terminal it is required.
      """)

  @Argument(help: "A document or folder in a docsync mount, or a folder under .history.")
  var path: String

  @Flag(name: .shortAndLong, help: "Do not ask for confirmation.")
  var yes = false

  func run() throws {
    let (mount, relative) = try VersionsCommand.locate(path)
    // Under .history every document is a folder of versions: there the mount tells.
    var info = stat()
    let folder =
      !URL(fileURLWithPath: path).standardizedFileURL.path.contains("/.history/")
      && stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    let what =
      folder
      ? "every document in the folder \(mount.mountPoint)/\(relative) and every version of them"
      : "\(mount.mountPoint)/\(relative) and every version of it"
    if !yes {
      guard isatty(0) == 1 else {
        throw CommandFailure(
          "refusing to forget \(mount.mountPoint)/\(relative) without confirmation: "
            + "run it on a terminal, or give --yes")
      }
      writeText(
        "Forget \(what), on every device and on the hub? This cannot be undone. [y/N] ", to: 1)
      let answer = Swift.readLine() ?? ""
      guard ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
      else {
        throw CommandFailure("nothing forgotten")
      }
    }
    let payload = try mount.request("forget " + hexString(Array(relative.utf8)))
    let counts = payload.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
    let versions = counts.first ?? 0
    let documents = counts.count > 1 ? counts[1] : 1
    let plural = { (count: Int, noun: String) in "\(count) \(noun)\(count == 1 ? "" : "s")" }
    let named =
      documents == 1 && !folder
      ? plural(versions, "version")
      : "\(plural(documents, "document")), \(plural(versions, "version"))"
    writeText(
      "forgot \(mount.mountPoint)/\(relative): \(named), on the hub and here; other devices "
        + "drop \(documents == 1 && !folder ? "it" : "them") at their next sync\n", to: 1)
  }
}
