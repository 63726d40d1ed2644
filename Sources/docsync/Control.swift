import DocumentModel
import Foundation
import Glibc
import Hub
import SyncEngine

/// The control socket of a running mount, in its state folder: one request line, then one
/// response (`ok` and a payload, or `error <message>`).
///
/// Both ends work relative to the state folder, because a Unix socket path is limited to 108
/// bytes and state folders can be deeper than that.
enum Control {
  static let socketName = "control.sock"

  /// The merged and base views of a document in conflict, by name (see
  /// `DocumentFileSystem.mergeViewNames`).
  typealias MergeViewNames = @Sendable (DocumentPath) -> [(name: [UInt8], isBase: Bool)]

  /// Serves requests for `engine` on a thread per connection.
  static func serve(
    engine: SyncEngine, state: String, mountPoint: String, mergeViews: @escaping MergeViewNames
  ) throws {
    guard chdir(state) == 0 else {
      throw CommandFailure("cannot enter the state folder \(state): \(errorText(errno))")
    }
    unlink(socketName)
    let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard server >= 0 else {
      throw CommandFailure("cannot create the control socket: \(errorText(errno))")
    }
    var address = unixAddress(socketName)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard bound == 0, listen(server, 16) == 0 else {
      throw CommandFailure("cannot listen on the control socket: \(errorText(errno))")
    }
    chmod(socketName, 0o600)
    let thread = Thread {
      while true {
        let client = accept(server, nil, nil)
        if client < 0 {
          switch errno {
          case EINTR, ECONNABORTED:
            continue
          case EMFILE, ENFILE, ENOBUFS, ENOMEM:
            // Out of descriptors or memory for a moment: the client waits in the backlog
            // until some are free. Returning here would leave the mount without `docsync
            // sync`, `status` and `pause` for the rest of its life.
            usleep(50_000)
            continue
          default:
            return
          }
        }
        Thread.detachNewThread {
          handle(client, engine: engine, mountPoint: mountPoint, mergeViews: mergeViews)
        }
      }
    }
    thread.name = "docsync-control"
    thread.start()
  }

  private static func handle(
    _ client: Int32, engine: SyncEngine, mountPoint: String, mergeViews: MergeViewNames
  ) {
    defer { close(client) }
    guard let line = readLine(client) else { return }
    let words = line.split(separator: " ").map(String.init)
    switch words.first {
    case "sync":
      // Bounded before any arithmetic: NaN, infinity or 1e300 must not trap the daemon.
      let asked = words.count > 1 ? Double(words[1]) ?? 60 : 60
      let milliseconds = asked.isFinite ? Int(min(max(asked, 0), maximumSyncSeconds) * 1000) : 0
      let outcome = waitFor { () async -> String? in
        do throws(SyncError) {
          try await engine.synchronize(timeout: .milliseconds(milliseconds))
          return nil
        } catch {
          return error.description
        }
      }
      reply(client, outcome.map { "error " + $0 } ?? "ok")
    case "pause":
      engine.pause()
      reply(client, "ok")
    case "resume":
      engine.resume()
      reply(client, "ok")
    case "status":
      reply(client, "ok\n" + encoded(StatusReport(engine.status(), mountPoint: mountPoint)))
    case "versions":
      // The path travels as hex: a name may hold spaces, newlines or bytes that are not UTF-8.
      guard words.count == 2, let bytes = hexBytes(words[1]) else {
        return reply(client, "error malformed versions request")
      }
      let path = DocumentPath(components: bytes.split(separator: UInt8(ascii: "/")).map(Array.init))
      guard let versions = engine.versions(of: path) else {
        return reply(client, "error \(mountPoint)/\(path) is not a synced document")
      }
      let report = VersionsReport(
        mountPoint: mountPoint, path: path, current: versions.current,
        conflicts: versions.conflicts, views: versions.conflicts.isEmpty ? [] : mergeViews(path))
      reply(client, "ok\n" + encoded(report))
    case "events":
      // `events` streams from now; `events N` first sends what is kept after sequence N.
      var after = words.count > 1 ? UInt64(words[1]) ?? engine.events.latest : engine.events.latest
      guard send(client, "ok\n") else { return }
      while true {
        let events = engine.events.wait(after: after)
        // Empty: the mount is stopping; closing the socket ends the reader's stream.
        guard let last = events.last else { return }
        let lines = events.map { encoded(EventReport($0, mountPoint: mountPoint)) + "\n" }
        guard send(client, lines.joined()) else { return }
        after = last.sequence
      }
    case "history":
      guard words.count == 2, let bytes = hexBytes(words[1]) else {
        return reply(client, "error malformed history request")
      }
      let path = DocumentPath(components: bytes.split(separator: UInt8(ascii: "/")).map(Array.init))
      let history = engine.versionsOverTime(of: path)
      guard history.versions.contains(where: { $0.kind == .file || $0.kind == .symlink }) else {
        return reply(client, "error \(mountPoint)/\(path) has no kept versions")
      }
      let versions = engine.versions(of: path)
      let report = HistoryReport(
        mountPoint: mountPoint, path: path, versions: history.versions, current: versions?.current,
        conflicts: Set(versions?.conflicts.map(\.id) ?? []), earlier: history.earlier)
      reply(client, "ok\n" + encoded(report))
    case "retention":
      // `retention` shows the setting; `retention staggered` or `retention keep <ms>` sets it.
      let asked = words.dropFirst().joined(separator: " ")
      let outcome = waitFor { () async -> String in
        do throws(SyncError) {
          if !asked.isEmpty {
            guard let policy = RetentionPolicy(serialized: asked) else {
              return "error malformed retention request"
            }
            try await engine.setRetention(policy)
          }
          return "ok\n" + (try await engine.retentionPolicy()).description
        } catch {
          return "error " + error.description
        }
      }
      reply(client, outcome)
    case "prune":
      let outcome = waitFor { () async -> String in
        do throws(SyncError) {
          let report = try await engine.prune(timeout: .seconds(3600))
          return "ok\n" + encoded(PruneSummary(report))
        } catch {
          return "error " + error.description
        }
      }
      reply(client, outcome)
    case "forget":
      guard words.count == 2, let bytes = hexBytes(words[1]) else {
        return reply(client, "error malformed forget request")
      }
      let path = DocumentPath(components: bytes.split(separator: UInt8(ascii: "/")).map(Array.init))
      let outcome = waitFor { () async -> String in
        do throws(SyncError) {
          let outcome = try await engine.forget(path, timeout: .seconds(3600))
          return "ok\n\(outcome.versions) \(outcome.documents)"
        } catch {
          return "error " + error.description
        }
      }
      reply(client, outcome)
    default:
      reply(client, "error unknown request")
    }
  }

  /// Writes all of `text`, false once the reader has gone. MSG_NOSIGNAL: a reader that left
  /// must not kill the mount with SIGPIPE (a foreground mount does not ignore it).
  private static func send(_ fd: Int32, _ text: String) -> Bool {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
      let n = bytes.withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { return false }
      bytes = bytes.dropFirst(n)
    }
    return true
  }

  /// Sends `line` to the mount and hands each line of its answer after `ok` to `body` as it
  /// arrives, until the mount closes the stream (it stopped) or `body` returns false.
  static func stream(
    _ line: String, state: String, mountPoint: String, _ body: (String) -> Bool
  ) throws {
    let fd = try connect(state: state, mountPoint: mountPoint)
    defer { close(fd) }
    writeText(line + "\n", to: fd)
    var pending: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    var answered = false
    while true {
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 {
        guard answered else {
          throw CommandFailure("the mount at \(mountPoint) stopped while answering")
        }
        return
      }
      pending += buffer[0..<n]
      while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
        let text = String(decoding: pending[..<end], as: UTF8.self)
        pending.removeSubrange(...end)
        if !answered {
          if text.hasPrefix("error ") { throw CommandFailure(String(text.dropFirst(6))) }
          guard text == "ok" else {
            throw CommandFailure("the mount at \(mountPoint) sent an unreadable answer")
          }
          answered = true
          continue
        }
        if !body(text) { return }
      }
    }
  }

  /// The longest `docsync sync --timeout` (a year): longer is forever for a person.
  static let maximumSyncSeconds: Double = 365 * 86_400

  /// Sends one request to the mount whose state folder is `state`; returns the payload.
  ///
  /// With `deadline` (``MonotonicTimer/now()`` nanoseconds) the answer is waited for until then
  /// only, and `late` is the error: a command's own deadline holds whatever the mount does.
  static func request(
    _ line: String, state: String, mountPoint: String, deadline: UInt64? = nil,
    late: @autoclosure () -> String = ""
  ) throws -> String {
    let fd = try connect(state: state, mountPoint: mountPoint)
    defer { close(fd) }
    writeText(line + "\n", to: fd)
    shutdown(fd, Int32(SHUT_WR))
    guard let bytes = deadline.map({ readAnswer(fd, until: $0) }) ?? readToEnd(fd) else {
      throw CommandFailure(late())
    }
    let response = String(decoding: bytes, as: UTF8.self)
    if response.hasPrefix("ok") {
      return String(response.dropFirst(2).drop { $0 == "\n" })
    }
    if response.hasPrefix("error ") {
      throw CommandFailure(String(response.dropFirst(6)).trimmingCharacters(in: "\n"))
    }
    throw CommandFailure("the mount at \(mountPoint) stopped while answering")
  }

  /// A socket connected to the control socket in `state`.
  ///
  /// The socket is named through `/proc/self/fd`, which is short whatever the state folder's
  /// depth, and, unlike `chdir`, leaves other threads' requests (progress polls) alone.
  private static func connect(state: String, mountPoint: String) throws -> Int32 {
    let folder = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard folder >= 0 else {
      throw CommandFailure("the mount at \(mountPoint) is not running (no state folder \(state))")
    }
    defer { close(folder) }
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw CommandFailure(errorText(errno)) }
    var address = unixAddress("/proc/self/fd/\(folder)/\(socketName)")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard connected == 0 else {
      close(fd)
      throw CommandFailure(
        "the mount at \(mountPoint) is not running (no answer on its control socket)")
    }
    return fd
  }

  /// Everything `fd` sends until it closes, or nil when `deadline` (monotonic nanoseconds)
  /// passes first. Each wait is poll(2)'s relative timeout, recomputed from the monotonic clock.
  private static func readAnswer(_ fd: Int32, until deadline: UInt64) -> [UInt8]? {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let now = MonotonicTimer.now()
      guard now < deadline else { return nil }
      var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      let ready = poll(&waiting, 1, Int32(clamping: (deadline - now + 999_999) / 1_000_000))
      if ready < 0 && errno != EINTR { return bytes }
      guard ready > 0 else { continue }
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
      if n <= 0 { return bytes }
      bytes += buffer[0..<n]
    }
  }

  private static func unixAddress(_ path: String) -> sockaddr_un {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
    }
    return address
  }

  private static func readLine(_ fd: Int32) -> String? {
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while bytes.count < 4096 {
      let n = read(fd, &byte, 1)
      if n < 0 && errno == EINTR { continue }
      if n <= 0 || byte == UInt8(ascii: "\n") { break }
      bytes.append(byte)
    }
    return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
  }

  private static func reply(_ fd: Int32, _ text: String) { writeText(text + "\n", to: fd) }

  private static func encoded(_ value: some Encodable) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
  }
}

func hexBytes(_ text: String) -> [UInt8]? {
  let raw = Array(text.utf8)
  guard raw.count % 2 == 0 else { return nil }
  var out: [UInt8] = []
  for index in stride(from: 0, to: raw.count, by: 2) {
    guard let byte = UInt8(String(decoding: raw[index...index + 1], as: UTF8.self), radix: 16)
    else { return nil }
    out.append(byte)
  }
  return out
}

/// Runs async work from a plain thread and waits for its result.
func waitFor<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
  let box = ResultBox<T>()
  let semaphore = DispatchSemaphore(value: 0)
  Task.detached {
    box.value = await work()
    semaphore.signal()
  }
  semaphore.wait()
  return box.value!
}

/// Carries a result from a task to the thread that waits for it.
final class ResultBox<T>: @unchecked Sendable {
  var value: T?
}

/// `docsync status --json`: stable field names for scripts (README.md documents them).
struct StatusReport: Codable {
  struct Conflict: Codable {
    var path: String
    var versions: Int
  }

  /// A path that keeps its last good content, or a conflict version that reads as an error,
  /// until its content arrives.
  struct Waiting: Codable {
    var path: String
    /// The conflict version's name in `.versions/<path>/`; absent for the current version.
    var version: String?
    /// `fetching`, `damaged here`, `damaged on the hub` or `missing on the hub`.
    var reason: String
  }

  struct Unreadable: Codable {
    var path: String
    /// The error of the last attempt to read or copy it.
    var reason: String
  }

  /// One direction of transfer: versions (files) and bytes done and in all, counted since that
  /// direction was last idle.
  struct Transfer: Codable {
    var doneFiles: Int
    var doneBytes: UInt64
    var totalFiles: Int
    var totalBytes: UInt64

    init(_ transfer: SyncStatus.Transfer) {
      doneFiles = transfer.doneFiles
      doneBytes = transfer.doneBytes
      totalFiles = transfer.totalFiles
      totalBytes = transfer.totalBytes
    }

    var remainingFiles: Int { totalFiles - doneFiles }
    var remainingBytes: UInt64 { totalBytes - min(doneBytes, totalBytes) }
  }

  var mountPoint: String
  /// Absent when the mount is not running.
  var device: String?
  var deviceID: String?
  var hub: String?
  /// `up to date`, `uploading`, `downloading`, `pending`, `offline`, `cannot sync`, `paused` or
  /// `not running`.
  var state: String
  var offlineSince: String?
  var offlineReason: String?
  /// cannot sync: since when and why (this device's disk or state, not the hub).
  var cannotSyncSince: String?
  var cannotSyncReason: String?
  var pendingUploads: Int
  var upload: Transfer?
  var download: Transfer?
  var lastSync: String?
  var conflicts: [Conflict]
  /// Absent when the mount is not running.
  var waiting: [Waiting]?
  /// Saves that could not be read or copied for upload (a full disk); absent when none.
  var unreadable: [Unreadable]?
  /// Paths with a version whose content cannot be provided for upload; absent when none.
  var heldBack: [String]?
  /// Bytes of content this run put on the hub and fetched from it, as stored there.
  var contentBytesSent: UInt64?
  var contentBytesReceived: UInt64?

  init(_ status: SyncStatus, mountPoint: String) {
    self.mountPoint = mountPoint
    device = status.deviceName
    deviceID = status.deviceID
    hub = status.hub
    switch status.state {
    case .upToDate: state = "up to date"
    case .uploading: state = "uploading"
    case .downloading: state = "downloading"
    case .pending: state = "pending"
    case .paused: state = "paused"
    case .offline(let since, let reason):
      state = "offline"
      offlineSince = isoTime(since)
      offlineReason = reason
    case .cannotSync(let since, let reason):
      state = "cannot sync"
      cannotSyncSince = isoTime(since)
      cannotSyncReason = reason
    }
    pendingUploads = status.pendingUploads
    upload = Transfer(status.upload)
    download = Transfer(status.download)
    lastSync = status.lastSync.map(isoTime)
    conflicts = status.conflicts.map { Conflict(path: $0.path.description, versions: $0.versions) }
    waiting = status.waiting.map {
      Waiting(path: $0.path.description, version: $0.version, reason: $0.reason.rawValue)
    }
    if !status.unreadable.isEmpty {
      unreadable = status.unreadable.map {
        Unreadable(path: $0.path.description, reason: $0.reason)
      }
    }
    if !status.heldBack.isEmpty { heldBack = status.heldBack.map(\.description) }
    contentBytesSent = status.contentBytesSent
    contentBytesReceived = status.contentBytesReceived
  }

  /// A docsync mount whose process has ended.
  init(notRunning mountPoint: String) {
    self.mountPoint = mountPoint
    state = "not running"
    pendingUploads = 0
    conflicts = []
  }
}

/// `docsync versions --json`: the current version of one document and its conflict versions.
struct VersionsReport: Codable {
  struct Version: Codable {
    /// The name under `.versions/<path>/`; absent for the current version.
    var name: String?
    var current: Bool
    var device: String
    var modified: String
    var size: UInt64
    /// The shell command that makes this version the outcome of the conflict; absent for the
    /// current version of a document that is not in conflict.
    var command: String?
  }

  /// A read-only file in `.versions/<path>/` that helps merge a text document in conflict.
  struct View: Codable {
    /// `merged<ext>` or `base<ext>`.
    var name: String
    /// `merged` (a three-way merge of every version) or `base` (their nearest common ancestor).
    var kind: String
    /// The shell command that uses it: `cp` of the merge over the document takes it; `diff`
    /// against the base shows what the current version changed.
    var command: String
  }

  var mountPoint: String
  var path: String
  var versions: [Version]
  /// Empty when the document has none (not in conflict, or not text).
  var views: [View]?

  init(
    mountPoint: String, path: DocumentPath, current: VersionRecord, conflicts: [VersionRecord],
    views: [(name: [UInt8], isBase: Bool)] = []
  ) {
    self.mountPoint = mountPoint
    self.path = path.description
    let document = mountPoint + "/" + path.description
    let folder = mountPoint + "/.versions/" + path.description
    versions = [
      Version(
        name: nil, current: true, device: current.deviceName,
        modified: current.modified.isoString, size: current.content.size ?? 0,
        command: conflicts.isEmpty ? nil : "rm -r \(shellQuoted(folder))")
    ]
    for record in conflicts.sorted(by: {
      VersionsName.name(for: $0).lexicographicallyPrecedes(VersionsName.name(for: $1))
    }) {
      let name = VersionsName.string(for: record)
      versions.append(
        Version(
          name: name, current: false, device: record.deviceName,
          modified: record.modified.isoString, size: record.content.size ?? 0,
          command: "cp \(shellQuoted(folder + "/" + name)) \(shellQuoted(document))"))
    }
    self.views = views.map { view in
      let name = String(decoding: view.name, as: UTF8.self)
      let file = shellQuoted(folder + "/" + name)
      return View(
        name: name, kind: view.isBase ? "base" : "merged",
        command: view.isBase
          ? "diff -u \(file) \(shellQuoted(document))" : "cp \(file) \(shellQuoted(document))")
    }
  }
}

/// `it's` → `'it'\''s'`: safe to paste into any POSIX shell.
func shellQuoted(_ text: String) -> String {
  "'" + text.replacingAll("'", with: "'\\''") + "'"
}

/// `2026-11-20T14:03:12Z`.
func isoTime(_ milliseconds: UInt64) -> String {
  var seconds = time_t(milliseconds / 1000)
  var parts = tm()
  gmtime_r(&seconds, &parts)
  func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
  return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
    + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
}
