import DocumentModel

/// A document, or one of its conflict versions, whose content this device does not have yet.
public struct ContentWaiting: Sendable, Equatable {
  public var path: DocumentPath
  /// The conflict version's name under `.versions/<path>/`; nil for the current version, whose
  /// path meanwhile shows its last good content.
  public var version: String?
  public var reason: ContentWait

  public init(path: DocumentPath, version: String?, reason: ContentWait) {
    self.path = path
    self.version = version
    self.reason = reason
  }
}
