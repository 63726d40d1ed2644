/// Checks every stored object a device receives before anything uses it: the frame is known
/// and expands within bounds, the plain bytes hash to the id that was asked for, and the object
/// is what its parent said it is (a chunk of that size, a node of that height and size).
///
/// What passes is exactly the content its record named: ids are hashes (keyed per library), so
/// a damaged, swapped or forged object fails here, whatever the hub or the network did.
public struct ObjectVerifier {
  public let hasher: ObjectHasher
  let compressor: ObjectCompressor
  let maximumChunk: Int

  public init(
    hasher: ObjectHasher = ObjectHasher(), compressor: ObjectCompressor = ObjectCompressor(),
    parameters: ChunkingParameters = .standard
  ) {
    self.hasher = hasher
    self.compressor = compressor
    maximumChunk = parameters.maximum
  }

  /// The plain bytes of the chunk `entry` names, from its stored frame.
  public func chunk(_ framed: [UInt8], for entry: ManifestEntry) throws(ManifestError) -> [UInt8] {
    let plain = try compressor.plain(
      framed, maximumSize: max(maximumChunk, Int(clamping: entry.size)))
    guard hasher.id(of: plain, kind: .chunk) == entry.id else {
      throw .doesNotMatch(entry.id, "its bytes do not hash to its id")
    }
    guard UInt64(plain.count) == entry.size else {
      throw .doesNotMatch(entry.id, "\(plain.count) bytes where \(entry.size) were named")
    }
    return plain
  }

  /// The plain bytes of the chunk `entry` names, from its stored frame, checked for their size
  /// but not yet for their id: for content whose whole hash is checked as it is put together,
  /// which vouches for every chunk at once, and only when that check fails are the ids read
  /// (``chunk(_:for:)``'s check, done then on what was written). Hashing each chunk's id on
  /// the way in was half a 1 GiB pull's CPU.
  public func chunkCheckedLater(_ framed: [UInt8], for entry: ManifestEntry)
    throws(ManifestError) -> [UInt8]
  {
    let plain = try compressor.plain(
      framed, maximumSize: max(maximumChunk, Int(clamping: entry.size)))
    guard UInt64(plain.count) == entry.size else {
      throw .doesNotMatch(entry.id, "\(plain.count) bytes where \(entry.size) were named")
    }
    return plain
  }

  /// The node `entry` names at `height`, from its stored frame.
  public func node(_ framed: [UInt8], for entry: ManifestEntry, height: UInt8)
    throws(ManifestError) -> ManifestNode
  {
    // A node's encoding is at most 1,024 entries of 32 bytes and a size each.
    let plain = try compressor.plain(framed, maximumSize: 64 << 10)
    guard hasher.id(of: plain, kind: .node) == entry.id else {
      throw .doesNotMatch(entry.id, "its bytes do not hash to its id")
    }
    let node = try ManifestNode(decoding: plain)
    guard node.height == height else {
      throw .doesNotMatch(entry.id, "a node of height \(node.height) where \(height) was named")
    }
    guard node.size == entry.size else {
      throw .doesNotMatch(entry.id, "a node over \(node.size) bytes where \(entry.size) were named")
    }
    return node
  }
}
