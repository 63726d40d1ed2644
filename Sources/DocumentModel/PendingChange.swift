/// A version to be recorded, before it has a time and an author.
public struct PendingChange: Hashable, Sendable {
  public let path: DocumentPath
  public let content: VersionContent
  public let parents: [VersionID]
  public let origin: RenameOrigin?
  /// The file's own modification time (nanoseconds), carried to the record.
  public let contentTime: Int64?

  public init(
    path: DocumentPath, content: VersionContent, parents: [VersionID], origin: RenameOrigin? = nil,
    contentTime: Int64? = nil
  ) {
    self.path = path
    self.content = content
    self.parents = parents
    self.origin = origin
    self.contentTime = contentTime
  }

  /// The same change with the file's modification time.
  public func with(contentTime: Int64?) -> PendingChange {
    PendingChange(
      path: path, content: content, parents: parents, origin: origin, contentTime: contentTime)
  }
}

/// One device as the author of versions: its id, its name and its hybrid logical clock.
public struct VersionAuthor: Sendable {
  public let deviceID: DeviceID
  public let deviceName: String
  public var clock: HybridLogicalClock

  public init(deviceID: DeviceID, deviceName: String, clock: HybridLogicalClock = .init()) {
    self.deviceID = deviceID
    self.deviceName = deviceName
    self.clock = clock
  }

  /// Remembers the time of a record that arrived, so later local versions are later than it.
  public mutating func observe(_ record: VersionRecord) {
    clock.observe(record.modified)
  }

  /// Turns changes into records whose times exceed their parents' (looked up in `known`), the
  /// origin's, and every time this device has seen, even if the wall clock `now` is behind.
  ///
  /// A change that follows a head also follows the heads of equal content, which were shown
  /// as that one version (see ``PathState/losingDocuments``): an edit made before their merge
  /// leaves one line of history, not a conflict with a version it already continued.
  ///
  /// `chunks` gives the chunk root of content this device has cut into chunks: a file version
  /// whose content has one names it, and moves as chunks.
  public mutating func record(
    _ changes: [PendingChange], known: VersionSet, now: UInt64,
    chunks: (ContentHash, UInt64) -> ContentRoot? = { _, _ in nil }
  ) -> [VersionRecord] {
    changes.map { change in
      var parents = change.parents
      if !parents.isEmpty {
        let heads = known.heads(at: change.path)
        if heads.count > 1 {
          let followed = heads.filter { parents.contains($0.id) }.map(\.content)
          parents += heads.filter { !parents.contains($0.id) && followed.contains($0.content) }
            .map(\.id)
        }
      }
      for parent in parents {
        if let record = known[parent] { clock.observe(record.modified) }
      }
      if let origin = change.origin, let record = known[origin.version] {
        clock.observe(record.modified)
      }
      var root: ContentRoot?
      if case .file(let hash, let size, _) = change.content { root = chunks(hash, size) }
      return VersionRecord(
        path: change.path, content: change.content, parents: parents,
        modified: clock.tick(now: now), deviceID: deviceID, deviceName: deviceName,
        origin: change.origin, contentTime: change.contentTime, chunks: root)
    }
  }
}
