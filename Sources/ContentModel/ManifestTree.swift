import DocumentModel

/// A version's manifest: the reference its record names and the nodes that a device uploads
/// with its chunks, children before parents (so that a hub which has a node has all of it).
public struct ManifestTree: Sendable {
  public let root: ContentRoot
  /// Every node of the tree, bottom level first; empty for content of one chunk.
  public let nodes: [(id: ObjectID, node: ManifestNode, encoded: [UInt8])]
}
