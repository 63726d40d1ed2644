import DocumentModel

/// A new working file on its way into the tree: its name under the working files, and the blob
/// it was, when it was renamed from one rather than copied.
public struct Incoming: Sendable {
  public var name: String
  public var fromBlob: ContentHash?

  public init(name: String, fromBlob: ContentHash?) {
    self.name = name
    self.fromBlob = fromBlob
  }
}
