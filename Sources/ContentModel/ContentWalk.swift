import DocumentModel

/// Finds the chunks a byte range of a version's content needs, walking its manifest tree from
/// the root and loading only the nodes on the way (what a read of part of a file that is not
/// on this device fetches, and what a download of a whole file lists).
public struct ContentWalk {
  public let root: ContentRoot

  public init(root: ContentRoot) { self.root = root }

  /// The chunks that overlap `range` (clamped to the content), in order, each with the offset
  /// in the content at which it starts. `node` gives the checked node an entry names at a
  /// height (from this device's store, or fetched and passed through ``ObjectVerifier``).
  public func chunks<E: Error>(
    overlapping range: Range<UInt64>,
    node: (ManifestEntry, UInt8) throws(E) -> ManifestNode
  ) throws(E) -> [(entry: ManifestEntry, start: UInt64)] {
    let wanted = min(range.lowerBound, root.size)..<min(range.upperBound, root.size)
    let top = ManifestEntry(id: root.object, size: root.size)
    if root.height == 0 { return wanted.isEmpty && root.size > 0 ? [] : [(top, UInt64(0))] }
    guard !wanted.isEmpty else { return [] }
    var result: [(entry: ManifestEntry, start: UInt64)] = []
    try descend(top, height: root.height, start: UInt64(0), wanted, node, into: &result)
    return result
  }

  private func descend<E: Error>(
    _ entry: ManifestEntry, height: UInt8, start: UInt64, _ wanted: Range<UInt64>,
    _ node: (ManifestEntry, UInt8) throws(E) -> ManifestNode,
    into result: inout [(entry: ManifestEntry, start: UInt64)]
  ) throws(E) {
    let loaded = try node(entry, height)
    // The part of the wanted range under this node, in the node's own offsets.
    let local =
      (max(wanted.lowerBound, start) - start)..<(min(wanted.upperBound, start + entry.size) - start)
    for (child, offset) in loaded.entries(overlapping: local) {
      if height == 1 {
        result.append((child, start + offset))
      } else {
        try descend(child, height: height - 1, start: start + offset, wanted, node, into: &result)
      }
    }
  }
}
