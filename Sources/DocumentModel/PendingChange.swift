/// A version to be recorded, before it has a time and an author.
public struct PendingChange: Hashable, Sendable {
  public let path: DocumentPath
  public let content: VersionContent
  public let parents: [VersionID]
  public let origin: RenameOrigin?

  public init(
    path: DocumentPath, content: VersionContent, parents: [VersionID], origin: RenameOrigin? = nil
  ) {
    self.path = path
    self.content = content
    self.parents = parents
    self.origin = origin
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
  public mutating func record(
    _ changes: [PendingChange], known: VersionSet, now: UInt64
  ) -> [VersionRecord] {
    changes.map { change in
      for parent in change.parents {
        if let record = known[parent] { clock.observe(record.modified) }
      }
      if let origin = change.origin, let record = known[origin.version] {
        clock.observe(record.modified)
      }
      return VersionRecord(
        path: change.path, content: change.content, parents: change.parents,
        modified: clock.tick(now: now), deviceID: deviceID, deviceName: deviceName,
        origin: change.origin)
    }
  }
}
