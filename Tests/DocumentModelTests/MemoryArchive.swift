import DocumentModel

/// What a device's database holds, in memory: the archive of a `VersionSet` that keeps only
/// heads, for tests that compare it with a set that keeps everything.
final class MemoryArchive: VersionArchive, @unchecked Sendable {
  private var stored: [VersionID: VersionRecord] = [:]
  private var order: [VersionID] = []
  var released: Set<VersionID> = []

  /// Stores records, as a device does before it inserts them into its set.
  func store(_ records: some Sequence<VersionRecord>) {
    for record in records where stored[record.id] == nil {
      stored[record.id] = record
      order.append(record.id)
    }
  }

  func record(_ id: VersionID) -> VersionRecord? { stored[id] }

  func followers(of id: VersionID) -> [VersionID] {
    order.filter { stored[$0]!.parents.contains(id) }
  }

  func records(at path: DocumentPath) -> [VersionRecord] {
    order.compactMap { stored[$0] }.filter { $0.path == path }
  }

  func versions(withContent hash: ContentHash) -> [VersionID] {
    order.filter { stored[$0]!.content.blobHash == hash }
  }

  func isReleased(_ id: VersionID) -> Bool { released.contains(id) }

  func hasEarlierVersions(at path: DocumentPath) -> Bool {
    records(at: path).contains { record in
      (record.kind == .file || record.kind == .symlink) && !followers(of: record.id).isEmpty
        && !released.contains(record.id)
    }
  }
}
