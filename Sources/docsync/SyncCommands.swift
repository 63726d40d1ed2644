import ArgumentParser
import Foundation
import Glibc
import Hub
import Synchronization

/// A running docsync mount, found by its mount point.
struct RunningMount {
  let mountPoint: String
  let state: String

  init(_ path: String) throws {
    let target = try locateMountPoint(path)
    guard let record = MountTable.record(at: target), let state = record.docsyncState else {
      throw CommandFailure("\(target) is not a docsync mount")
    }
    mountPoint = target
    self.state = state
  }

  init(record: MountRecord, state: String) {
    mountPoint = record.mountPoint
    self.state = state
  }

  func request(
    _ line: String, deadline: UInt64? = nil, late: @autoclosure () -> String = ""
  ) throws -> String {
    try Control.request(
      line, state: state, mountPoint: mountPoint, deadline: deadline, late: late())
  }

  func status() throws -> StatusReport {
    let payload = try request("status")
    guard let report = try? JSONDecoder().decode(StatusReport.self, from: Data(payload.utf8))
    else {
      throw CommandFailure("the mount at \(mountPoint) sent an unreadable status")
    }
    return report
  }

  /// Every docsync mount of this user: the kernel lists every mount of the namespace, and a
  /// mount's state folder belongs to the user who mounted it.
  static func all() -> [RunningMount] {
    MountTable.records().compactMap { record in
      guard let state = record.docsyncState else { return nil }
      var info = stat()
      guard stat(state, &info) == 0, info.st_uid == getuid() else { return nil }
      return RunningMount(record: record, state: state)
    }
  }
}

/// The mount point that `path` names, refusing a docsync mount whose process has died.
func locateMountPoint(_ path: String) throws -> String {
  let (target, alive) = try mountPointPath(path)
  guard alive else {
    throw CommandFailure(
      "the mount at \(target) is not running (its process ended); "
        + "unmount it with: docsync unmount \(shellQuoted(target))")
  }
  return target
}

/// The absolute path of a mount point, also when its mount process has died: the kernel then
/// answers ENOTCONN, and `realpath` fails on it.
func mountPointPath(_ path: String) throws -> (target: String, alive: Bool) {
  if let resolved = resolvedPath(path) { return (resolved, true) }
  let failure = errno
  let absolute = URL(fileURLWithPath: path).standardizedFileURL.path as NSString
  if failure == ENOTCONN, let parent = resolvedPath(absolute.deletingLastPathComponent) {
    let candidate = (parent == "/" ? "" : parent) + "/" + absolute.lastPathComponent
    if MountTable.record(at: candidate)?.docsyncState != nil { return (candidate, false) }
  }
  if failure == ENOENT { throw CommandFailure("mount point \(path) does not exist") }
  throw CommandFailure("cannot use \(path): \(errorText(failure))")
}

/// `docsync sync`: push and pull now; return when the mount is up to date with the hub.
struct SyncCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "sync", abstract: "Sync a mount now and wait until it is up to date.")

  @Argument(help: "The mount point.")
  var mountPoint: String

  @Option(help: "Give up after this many seconds.")
  var timeout: Double = 60

  func validate() throws {
    guard timeout.isFinite, timeout > 0, timeout <= Control.maximumSyncSeconds else {
      throw ValidationError("--timeout: a number of seconds above 0, at most a year")
    }
  }

  func run() throws {
    // Measured on the monotonic clock from the start of the command: the wall clock may be
    // hours off or be stepped meanwhile. The mount keeps the same deadline and explains what it
    // waits for; the grace lets that answer arrive, and this side ends the wait regardless.
    let deadline = MonotonicTimer.deadline(after: .milliseconds(Int(timeout * 1000) + 500))
    let mount = try RunningMount(mountPoint)
    // Progress is for a person watching: on a terminal only, on stderr, one line redrawn.
    let progress = isatty(2) == 1 ? ProgressLine(mount: mount) : nil
    defer { progress?.finish() }
    _ = try mount.request(
      "sync \(timeout)", deadline: deadline,
      late: "the mount at \(mount.mountPoint) is not up to date after \(timeout) s "
        + "(it did not answer in time)")
  }
}

/// Redraws one line on stderr with what a sync moves and what remains, from the mount's
/// transfer counters, until `finish`.
final class ProgressLine: Sendable {
  private let finished = Mutex(false)
  private let drawn = Mutex(false)
  private let stopped = DispatchSemaphore(value: 0)

  init(mount: RunningMount) {
    let thread = Thread { [self] in
      while !finished.withLock({ $0 }) {
        if let report = try? mount.status(), let line = Self.describe(report) {
          writeText("\r\u{1B}[K" + line, to: 2)
          drawn.withLock { $0 = true }
        }
        usleep(200_000)
      }
      stopped.signal()
    }
    thread.start()
  }

  func finish() {
    finished.withLock { $0 = true }
    stopped.wait()
    if drawn.withLock({ $0 }) { writeText("\r\u{1B}[K", to: 2) }
  }

  /// `uploading 3 of 10 files (1.2 MB of 5.0 MB)`, and the same for downloads; nil when
  /// nothing moves.
  static func describe(_ report: StatusReport) -> String? {
    var parts: [String] = []
    for (verb, transfer) in [("uploading", report.upload), ("downloading", report.download)] {
      guard let transfer, transfer.remainingFiles > 0 else { continue }
      parts.append(
        "\(verb) \(transfer.doneFiles) of \(transfer.totalFiles) files "
          + "(\(byteCount(transfer.doneBytes)) of \(byteCount(transfer.totalBytes)))")
    }
    return parts.isEmpty ? nil : "\(report.mountPoint): " + parts.joined(separator: ", ")
  }
}

/// `512 bytes`, `1.2 kB`, `3.4 MB`, `5.6 GB` (powers of 1000, as `ls --si`).
func byteCount(_ bytes: UInt64) -> String {
  if bytes < 1000 { return bytes == 1 ? "1 byte" : "\(bytes) bytes" }
  var value = Double(bytes)
  for unit in ["kB", "MB", "GB", "TB"] {
    value /= 1000
    if value < 999.95 || unit == "TB" {
      let tenths = Int((value * 10).rounded())
      return "\(tenths / 10).\(tenths % 10) \(unit)"
    }
  }
  return "\(bytes) bytes"
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

  @Argument(help: "The mount point (default: every docsync mount of this user).")
  var mountPoint: String?

  @Flag(help: "Print JSON for scripts: one object for a mount point, an array for all mounts.")
  var json = false

  func run() throws {
    var reports: [StatusReport] = []
    if let mountPoint {
      reports = [try RunningMount(mountPoint).status()]
    } else {
      // One dead mount must not hide the others: it is listed as not running.
      reports = RunningMount.all().map { mount in
        (try? mount.status()) ?? StatusReport(notRunning: mount.mountPoint)
      }
    }
    if json {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
      let data =
        mountPoint == nil ? try encoder.encode(reports) : try encoder.encode(reports[0])
      writeText(String(decoding: data, as: UTF8.self) + "\n", to: 1)
      return
    }
    if reports.isEmpty {
      writeText("no docsync mounts\n", to: 1)
      return
    }
    writeText(reports.map(Self.text).joined(separator: "\n"), to: 1)
  }

  static func text(_ report: StatusReport) -> String {
    var lines = [report.mountPoint]
    if let device = report.device, let hub = report.hub {
      lines.append("  device:    \(device)")
      lines.append("  hub:       \(hub)")
    }
    lines.append("  state:     \(stateText(report))")
    if report.state != "not running" {
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
      if let waiting = report.waiting, !waiting.isEmpty {
        // Nobody needs to act: a path keeps what it showed, and the content comes by itself.
        lines.append("  waiting for content: \(waiting.count) (each path keeps what it shows)")
        for item in waiting {
          let name = item.version.map { ".versions/\(item.path)/\($0)" } ?? item.path
          lines.append("    \(name) (\(item.reason))")
        }
      }
      if let unreadable = report.unreadable, !unreadable.isEmpty {
        // Each is tried again by itself; the file keeps what was saved.
        lines.append("  cannot read to sync: \(unreadable.count) (tried again; nothing is lost)")
        for item in unreadable { lines.append("    \(item.path) (\(item.reason))") }
      }
      if let heldBack = report.heldBack, !heldBack.isEmpty {
        // An earlier version whose content is gone here; the file's later versions synced.
        lines.append(
          "  cannot upload: \(heldBack.count) (a saved version's content cannot be read here and "
            + "the file has changed since; docsync sync tries it again, see the log)")
        for path in heldBack { lines.append("    \(path)") }
      }
    }
    return lines.joined(separator: "\n") + "\n"
  }

  static func stateText(_ report: StatusReport) -> String {
    func files(_ count: Int) -> String { count == 1 ? "1 file" : "\(count) files" }
    switch report.state {
    case "offline":
      return "offline since \(report.offlineSince ?? "?") (\(report.offlineReason ?? ""))"
    case "cannot sync":
      // The hub is fine; what fails is here (a full disk): the person can act on it.
      return
        "cannot sync since \(report.cannotSyncSince ?? "?") (\(report.cannotSyncReason ?? "")); "
        + "trying again, nothing is lost"
    case "uploading":
      let upload = report.upload
      return "uploading \(files(upload?.remainingFiles ?? report.pendingUploads))"
        + (upload.map { " (\(byteCount($0.remainingBytes)))" } ?? "")
    case "downloading":
      let download = report.download
      return "downloading \(files(download?.remainingFiles ?? 0))"
        + (download.map { " (\(byteCount($0.remainingBytes)))" } ?? "")
    case "pending":
      return "pending (changes wait for a quiet moment or for a file to be closed)"
    case "not running":
      return
        "not running (the mount process ended; docsync unmount \(shellQuoted(report.mountPoint)))"
    default:
      return report.state
    }
  }
}

/// `docsync versions`: the current version of one document and its conflict versions, with the
/// command that chooses each, and the merged and base views of a text document in conflict.
struct VersionsCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "versions",
    abstract: "Show the current version and the conflict versions of one document.")

  @Argument(help: "A document in a docsync mount (absolute, or relative to this folder).")
  var path: String

  @Flag(help: "Print JSON for scripts.")
  var json = false

  func run() throws {
    let (mount, relative) = try Self.locate(path)
    let payload = try mount.request("versions " + hexString(Array(relative.utf8)))
    guard
      let report = try? JSONDecoder().decode(VersionsReport.self, from: Data(payload.utf8))
    else {
      throw CommandFailure("the mount at \(mount.mountPoint) sent unreadable versions")
    }
    if json {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
      writeText(String(decoding: try encoder.encode(report), as: UTF8.self) + "\n", to: 1)
      return
    }
    let conflicts = report.versions.count - 1
    var lines = [
      "\(report.mountPoint)/\(report.path): "
        + (conflicts == 0
          ? "no conflict"
          : "\(conflicts) conflict version\(conflicts == 1 ? "" : "s") in .versions/\(report.path)/")
    ]
    let width = report.versions.map(\.device.count).max() ?? 0
    for version in report.versions {
      let device = version.device.padding(toLength: width, withPad: " ", startingAt: 0)
      var line =
        "  \(version.current ? "current " : "conflict") \(version.modified)  \(device)  "
        + byteCount(version.size)
      if let name = version.name { line += "  \(name)" }
      lines.append(line)
      if let command = version.command {
        lines.append("           \(version.current ? "keep it:  " : "choose it:") \(command)")
      }
    }
    for view in report.views ?? [] {
      let what =
        view.kind == "base"
        ? "their nearest common ancestor"
        : "a three-way merge of every version, with markers where they overlap"
      lines.append(
        "  \(view.kind.padding(toLength: 8, withPad: " ", startingAt: 0)) \(view.name): \(what)")
      lines.append(
        "           \(view.kind == "base" ? "compare:  " : "take it:  ") \(view.command)")
    }
    writeText(lines.joined(separator: "\n") + "\n", to: 1)
  }

  /// The mount that holds `path` and the path inside it; a folder under `.versions` names its
  /// document.
  static func locate(_ path: String) throws -> (RunningMount, String) {
    let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
    // The document itself may be a symlink: only its folder is resolved.
    let parent = (absolute as NSString).deletingLastPathComponent
    guard let folder = resolvedPath(parent) else {
      if errno == ENOTCONN { _ = try locateMountPoint(parent) }
      throw CommandFailure("\(path) does not exist")
    }
    let name = (absolute as NSString).lastPathComponent
    let full = folder == "/" ? "/" + name : folder + "/" + name
    let mounts = RunningMount.all().filter { full.hasPrefix($0.mountPoint + "/") }
    guard let mount = mounts.max(by: { $0.mountPoint.count < $1.mountPoint.count }) else {
      throw CommandFailure("\(path) is not in a docsync mount")
    }
    var relative = String(full.dropFirst(mount.mountPoint.count + 1))
    if relative.hasPrefix(".versions/") || relative.hasPrefix(".history/") {
      // `.versions/<document>/` is a folder; a file in it is one version of that document.
      var info = stat()
      let isVersionFile = lstat(full, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
      relative = String(relative.drop(while: { $0 != "/" }).dropFirst())
      if isVersionFile { relative = (relative as NSString).deletingLastPathComponent }
    }
    return (mount, relative)
  }
}
