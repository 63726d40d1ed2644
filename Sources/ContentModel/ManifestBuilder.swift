import DocumentModel

/// Builds the manifest tree over a version's chunks.
///
/// Each level is cut where an entry's id ends in six zero bits (about 64 entries a node, at
/// least 2, at most ``ManifestNode/maximumEntries``), so node boundaries are content-defined like
/// chunk boundaries: an insertion near the start of a large file changes the chunks it touches
/// and one node per level above them, not the whole list. A GiB (about 16,000 chunks) has about
/// 250 leaves under a root of height 3 or less.
public struct ManifestBuilder: Sendable {
  let hasher: ObjectHasher

  public init(hasher: ObjectHasher = ObjectHasher()) {
    self.hasher = hasher
  }

  /// Whether a node ends after this entry.
  static func endsNode(_ entry: ManifestEntry) -> Bool {
    entry.id.bytes[31] & 0x3f == 0
  }

  /// The tree over `chunks`, in content order; one chunk needs no node. `chunks` is never
  /// empty: empty content is the one chunk of no bytes.
  public func build(chunks: [ManifestEntry]) -> ManifestTree {
    precondition(!chunks.isEmpty, "empty content is one chunk of no bytes")
    if chunks.count == 1 {
      return ManifestTree(
        root: ContentRoot(
          id: chunks[0].id, height: 0, size: chunks[0].size, scheme: hasher.scheme),
        nodes: [])
    }
    var nodes: [(id: ObjectID, node: ManifestNode, encoded: [UInt8])] = []
    var level = chunks
    var height: UInt8 = 1
    while true {
      var above: [ManifestEntry] = []
      var current: [ManifestEntry] = []
      func close() {
        let node = ManifestNode(height: height, entries: current)
        let encoded = node.encoded()
        let id = hasher.id(of: encoded, kind: .node)
        nodes.append((id, node, encoded))
        above.append(ManifestEntry(id: id, size: node.size))
        current.removeAll(keepingCapacity: true)
      }
      for entry in level {
        current.append(entry)
        if current.count == ManifestNode.maximumEntries
          || (current.count >= 2 && Self.endsNode(entry))
        {
          close()
        }
      }
      if !current.isEmpty {
        // A last lone entry joins the node before it, unless that one is full: every node has
        // two entries or more, so each level is at most half the one below and the tree ends.
        if current.count == 1, let last = nodes.last, last.node.height == height,
          last.node.entries.count < ManifestNode.maximumEntries
        {
          nodes.removeLast()
          above.removeLast()
          current = last.node.entries + current
        }
        close()
      }
      if above.count == 1 {
        return ManifestTree(
          root: ContentRoot(
            id: above[0].id, height: height, size: above[0].size, scheme: hasher.scheme),
          nodes: nodes)
      }
      level = above
      height += 1
    }
  }
}
