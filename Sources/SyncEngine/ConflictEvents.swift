import DocumentModel

/// The events that a change of one path's conflict versions makes: a pure function of the
/// versions before and after, so every way a conflict starts or ends is reported alike.
enum ConflictEvents {
  /// - Parameters:
  ///   - before: the path's conflict versions before the change.
  ///   - after: its conflict versions now.
  ///   - previous: what the path showed before the change.
  ///   - latest: what the path shows now, or, when it shows nothing, its newest head (the
  ///     deletion that ended it).
  ///   - isAutomaticMerge: whether `latest` is a merge docsync made by itself.
  static func between(
    before: [VersionRecord], after: [VersionRecord], previous: VersionRecord?,
    latest: VersionRecord?, at path: DocumentPath,
    isAutomaticMerge: (VersionRecord) -> Bool = { _ in false }
  ) -> [EngineEvent.Kind] {
    let beforeIDs = Set(before.map(\.id))
    let afterIDs = Set(after.map(\.id))
    // A version docsync merged from versions of equal content stands for them: the same
    // content in `.versions` under another name is neither news nor a resolution.
    func standsIn(_ record: VersionRecord, _ others: [VersionRecord]) -> Bool {
      others.contains {
        $0.content == record.content && (isAutomaticMerge(record) || isAutomaticMerge($0))
      }
    }
    let added = after.filter { !beforeIDs.contains($0.id) && !standsIn($0, before) }
    let removed = before.filter { !afterIDs.contains($0.id) && !standsIn($0, after) }
    if !added.isEmpty {
      // A version that replaces another (its device edited it again) is news about the
      // conflict, not its end.
      var devices: [String] = []
      for record in [latest].compactMap({ $0 }) + after where !devices.contains(record.deviceName) {
        devices.append(record.deviceName)
      }
      return [.conflict(path: path, added: added, versions: after.count, devices: devices)]
    }
    guard !removed.isEmpty else { return [] }
    guard let latest, !latest.content.isDeletion else {
      return [.resolved(path: path, how: .deleted, by: latest?.deviceName ?? "", remaining: 0)]
    }
    if after.isEmpty && isAutomaticMerge(latest) {
      var devices: [String] = []
      for record in [previous].compactMap({ $0 }) + before
      where !devices.contains(record.deviceName) {
        devices.append(record.deviceName)
      }
      return [.merged(path: path, devices: devices)]
    }
    let how: EngineEvent.ResolutionKind
    if let previous, latest.content == previous.content {
      how = .kept
    } else if removed.contains(where: { $0.content == latest.content }) {
      how = .chose
    } else {
      how = .merged
    }
    return [.resolved(path: path, how: how, by: latest.deviceName, remaining: after.count)]
  }
}
