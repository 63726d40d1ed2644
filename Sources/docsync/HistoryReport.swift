import DocumentModel

/// `docsync history --json`: every version of one document over time, oldest first, with
/// where each can be read and the command that restores it.
struct HistoryReport: Codable {
  struct Version: Codable {
    /// `current`, `conflict` (in `.versions`), `earlier` (in `.history`) or `deleted`.
    var state: String
    /// The name under `.history/<path>/` or `.versions/<path>/`; absent for the current version
    /// and for deletions.
    var name: String?
    var device: String
    var modified: String
    var size: UInt64?
    var version: String
    /// The shell command that makes this version current again; absent for the current
    /// version and for deletions.
    var command: String?
  }

  var mountPoint: String
  var path: String
  var versions: [Version]

  init(
    mountPoint: String, path: DocumentPath, versions records: [VersionRecord],
    current: VersionRecord?, conflicts: Set<VersionID>, earlier: Set<VersionID>
  ) {
    self.mountPoint = mountPoint
    self.path = path.description
    let document = shellQuoted(mountPoint + "/" + path.description)
    versions = records.map { record in
      let name = VersionsName.string(for: record)
      var version = Version(
        state: "deleted", name: nil, device: record.deviceName,
        modified: record.modified.isoString, size: record.content.size, version: record.id.hex,
        command: nil)
      if record.id == current?.id {
        version.state = "current"
      } else if conflicts.contains(record.id) {
        version.state = "conflict"
        version.name = name
        let file = mountPoint + "/.versions/" + path.description + "/" + name
        version.command = "cp \(shellQuoted(file)) \(document)"
      } else if earlier.contains(record.id) {
        version.state = "earlier"
        version.name = name
        let file = mountPoint + "/.history/" + path.description + "/" + name
        version.command = "cp \(shellQuoted(file)) \(document)"
      } else if !record.content.isDeletion {
        // A head that is neither current nor a conflict version: a file beside a folder that
        // took its path is listed in `.versions`, so only folders come here.
        version.state = record.kind == .directory ? "folder" : "conflict"
      }
      return version
    }
  }
}
