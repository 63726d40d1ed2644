/// One child of a manifest node: a chunk (in a node of height 1) or a node one level down, and
/// how many bytes of content it covers.
public struct ManifestEntry: Sendable, Hashable {
  public let id: ObjectID
  public let size: UInt64

  public init(id: ObjectID, size: UInt64) {
    self.id = id
    self.size = size
  }
}
