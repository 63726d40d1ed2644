import DocumentModel
import SyncEngine

/// One event of `docsync events --json`: stable field names for scripts (README.md documents
/// them); fields that do not apply to an event are absent.
struct EventReport: Codable {
  var sequence: UInt64
  var time: String
  var mountPoint: String
  /// `conflict`, `resolved`, `merged`, `offline`, `online`, `failing`, `recovered`,
  /// `heldBack`, `refused` or `transfer`.
  var event: String
  var path: String?
  /// conflict: the names of the new conflict versions under `.versions/<path>/`.
  var added: [String]?
  /// conflict: how many conflict versions the document has now.
  var versions: Int?
  /// conflict and merged: the devices whose versions meet, the current one's first.
  var devices: [String]?
  /// resolved: `chose`, `kept`, `merged` or `deleted`.
  var how: String?
  /// resolved: the device that resolved it.
  var by: String?
  /// resolved: conflict versions left.
  var remaining: Int?
  /// offline and failing: why; refused: what is wrong with the record.
  var reason: String?
  /// online: since when the hub could not be reached.
  var offlineSince: String?
  /// recovered: since when syncing failed on this device.
  var failingSince: String?
  /// refused: the record's id and the device it names.
  var version: String?
  var device: String?
  /// transfer: `upload` or `download`, and what moved.
  var direction: String?
  var files: Int?
  var bytes: UInt64?

  init(_ event: EngineEvent, mountPoint: String) {
    sequence = event.sequence
    time = isoTime(event.time)
    self.mountPoint = mountPoint
    switch event.kind {
    case .conflict(let path, let added, let versions, let devices):
      self.event = "conflict"
      self.path = path.description
      self.added = added.map { String(decoding: VersionsName.name(for: $0), as: UTF8.self) }
      self.versions = versions
      self.devices = devices
    case .resolved(let path, let how, let by, let remaining):
      self.event = "resolved"
      self.path = path.description
      self.how = how.rawValue
      self.by = by
      self.remaining = remaining
    case .merged(let path, let devices):
      self.event = "merged"
      self.path = path.description
      self.devices = devices
    case .offline(let reason):
      self.event = "offline"
      self.reason = reason
    case .online(let since):
      self.event = "online"
      offlineSince = isoTime(since)
    case .failing(let reason):
      self.event = "failing"
      self.reason = reason
    case .recovered(let since):
      self.event = "recovered"
      failingSince = isoTime(since)
    case .heldBack(let path):
      self.event = "heldBack"
      self.path = path.description
    case .refused(let version, let path, let device, let reason):
      self.event = "refused"
      self.version = version
      self.path = path
      self.device = device
      self.reason = reason
    case .transferred(let direction, let files, let bytes):
      self.event = "transfer"
      self.direction = direction.rawValue
      self.files = files
      self.bytes = bytes
    }
  }

  /// The line a person reads: time, mount, what happened. Names come from other devices and
  /// may hold control characters: they are shown as `?`, so that no name can move the cursor
  /// or start a second line.
  var text: String {
    func printable(_ text: String?) -> String { DesktopNotifier.plain(text ?? "") }
    let path = printable(self.path)
    let devices = (self.devices ?? []).map(printable)
    let by = printable(self.by)
    let device = printable(self.device)
    let reason = printable(self.reason)
    let what: String
    switch event {
    case "conflict":
      let count = versions ?? 0
      let others = devices.joined(separator: ", ")
      what =
        "conflict: \(path) was changed on \(others) at once; \(count) conflict "
        + "version\(count == 1 ? "" : "s") in .versions/\(path)/"
    case "resolved":
      let means =
        switch how {
        case "chose": "a conflict version was chosen"
        case "kept": "the current version was kept"
        case "merged": "a merge was saved"
        default: "the document was deleted"
        }
      let left = remaining ?? 0
      what =
        "resolved: \(path) on \(by) (\(means))"
        + (left > 0 ? "; \(left) conflict version\(left == 1 ? "" : "s") left" : "")
    case "merged":
      what = "merged: \(path) merged automatically (\(devices.joined(separator: ", ")))"
    case "offline":
      what = "offline: \(reason)"
    case "online":
      what = "back online (offline since \(offlineSince ?? "?"))"
    case "failing":
      what = "cannot sync: \(reason); trying again"
    case "recovered":
      what = "syncing again (failing since \(failingSince ?? "?"))"
    case "heldBack":
      what =
        "cannot upload: a saved version of \(path) cannot be read here, and the file has "
        + "changed since; docsync sync tries it again"
    case "refused":
      what = "refused: version \(version ?? "") of \(path) from \(device): \(reason)"
    case "transfer":
      let count = files ?? 0
      let verb = direction == "upload" ? "uploaded" : "downloaded"
      what = "\(verb) \(count) file\(count == 1 ? "" : "s") (\(byteCount(bytes ?? 0)))"
    default:
      what = event
    }
    return "\(time) \(mountPoint) \(what)"
  }
}
