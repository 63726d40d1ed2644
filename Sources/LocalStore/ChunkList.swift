import ContentModel
import DocumentModel

/// The chunks of one content, in order, with the root of the manifest tree over them: what a
/// device keeps beside content it holds, so that it can upload what the hub lacks and rebuild
/// a new version from the chunks it shares with this one.
public struct ChunkList: Sendable {
  public let entries: [ManifestEntry]
  /// The tree's nodes, bottom level first (children before parents, as the hub wants them),
  /// built once with the root: an upload and a pull each walk it again.
  public let tree: ManifestTree

  /// The manifest's root: what a record names.
  public var root: ContentRoot { tree.root }

  /// How this device cuts and names content (a plain library: unkeyed ids).
  public static let hasher = ObjectHasher()
  /// How lists kept before BLAKE3 named their chunks.
  static let blake2b = ObjectHasher(scheme: .blake2b)

  /// The hasher of a tree in `scheme`.
  public static func hasher(_ scheme: ObjectIDScheme) -> ObjectHasher {
    switch scheme {
    case .blake3: hasher
    case .blake2b: blake2b
    }
  }

  /// The list of `entries`, named in `scheme`: the current one for content cut here, the
  /// record's for a tree fetched from the hub.
  public init(entries: [ManifestEntry], scheme: ObjectIDScheme) {
    self.entries = entries
    tree = ManifestBuilder(hasher: Self.hasher(scheme)).build(chunks: entries)
  }

  /// The list of `bytes`, cut and named now in the current scheme.
  public init(cutting bytes: [UInt8]) {
    var splitter = ContentSplitter(hasher: Self.hasher)
    bytes.withUnsafeBytes { splitter.append($0) { _, _ in } }
    self.init(entries: splitter.finish { _, _ in }, scheme: .current)
  }

  /// How this list's objects are named.
  public var hasher: ObjectHasher { Self.hasher(root.scheme) }

  /// Each chunk and where it starts in the content.
  public var placed: [(entry: ManifestEntry, offset: UInt64)] {
    var offset: UInt64 = 0
    return entries.map { entry in
      defer { offset += entry.size }
      return (entry, offset)
    }
  }

  /// The entries as stored: each the 32-byte id, then the size in 4 bytes (a chunk is at most
  /// 256 KiB).
  public func encodedEntries() -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(entries.count * 36)
    for entry in entries {
      out += entry.id.bytes
      let size = UInt32(entry.size)
      out += [
        UInt8(size >> 24), UInt8((size >> 16) & 0xff), UInt8((size >> 8) & 0xff),
        UInt8(size & 0xff),
      ]
    }
    return out
  }

  /// A stored list, if it is whole and its chunks build the root it was stored with.
  public init?(root encodedRoot: [UInt8], entries encoded: [UInt8]) {
    guard let root = try? ContentRoot(decoding: encodedRoot), !encoded.isEmpty,
      encoded.count % 36 == 0
    else { return nil }
    var entries: [ManifestEntry] = []
    entries.reserveCapacity(encoded.count / 36)
    var index = 0
    while index < encoded.count {
      let id = ObjectID(bytes: encoded[index..<(index + 32)])!
      let size = encoded[(index + 32)..<(index + 36)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
      entries.append(ManifestEntry(id: id, size: size))
      index += 36
    }
    self.init(entries: entries, scheme: root.scheme)
    guard self.root == root else { return nil }
  }
}
