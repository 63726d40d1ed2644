import SyncEngine

/// What `docsync prune` reports, as the control socket carries it.
struct PruneSummary: Codable {
  var policy: String
  var versions: Int
  var files: Int
  var bytes: UInt64

  init(_ report: PruneReport) {
    policy = report.policy
    versions = report.versions
    files = report.blobs
    bytes = report.bytes
  }
}
