/// A node of a version's manifest tree: the ordered children (chunks, or nodes one level
/// down) whose contents, end to end, are the content the node covers.
///
/// Encoding: format byte 1, height, entry count (LEB128), then each entry's 32-byte id and its
/// size (LEB128). The node's id is the ``ObjectHasher`` id of these bytes as an ``ObjectKind/node``.
public struct ManifestNode: Sendable, Hashable {
  /// 1 when the entries are chunks; n + 1 when they are nodes of height n.
  public let height: UInt8
  public let entries: [ManifestEntry]

  /// More children than this is refused: a content-defined cut falls about every 64 entries,
  /// and the builder forces one at this count.
  public static let maximumEntries = 1024
  /// The highest tree that the largest file (2^64 bytes in one-byte chunks) could need.
  static let maximumHeight: UInt8 = 16
  static let format: UInt8 = 1

  public init(height: UInt8, entries: [ManifestEntry]) {
    precondition(height >= 1 && !entries.isEmpty && entries.count <= Self.maximumEntries)
    self.height = height
    self.entries = entries
  }

  /// The bytes of content under this node.
  public var size: UInt64 { entries.reduce(0) { $0 + $1.size } }

  public func encoded() -> [UInt8] {
    var out: [UInt8] = [Self.format, height]
    out.reserveCapacity(8 + entries.count * 36)
    LEB128.append(UInt64(entries.count), to: &out)
    for entry in entries {
      out.append(contentsOf: entry.id.bytes)
      LEB128.append(entry.size, to: &out)
    }
    return out
  }

  /// Decodes and checks a node: known format, a height in range, one to
  /// ``maximumEntries`` entries of positive size whose total fits in 64 bits, nothing after.
  public init(decoding bytes: [UInt8]) throws(ManifestError) {
    var reader = ByteReader(bytes)
    let format = try reader.byte()
    guard format == Self.format else { throw .unknownFormat(format) }
    height = try reader.byte()
    guard height >= 1 && height <= Self.maximumHeight else {
      throw .malformed("height \(height)")
    }
    let count = try reader.leb128()
    guard count >= 1 && count <= UInt64(Self.maximumEntries) else {
      throw .malformed("\(count) entries")
    }
    var entries: [ManifestEntry] = []
    entries.reserveCapacity(Int(count))
    var total: UInt64 = 0
    for _ in 0..<count {
      let id = ObjectID(bytes: try reader.bytes(32))!
      let size = try reader.leb128()
      guard size > 0 else { throw .malformed("an entry of no bytes") }
      let (sum, overflow) = total.addingReportingOverflow(size)
      guard !overflow else { throw .malformed("sizes add up past 2^64") }
      total = sum
      entries.append(ManifestEntry(id: id, size: size))
    }
    guard reader.isAtEnd else { throw .malformed("bytes after the last entry") }
    self.entries = entries
  }

  /// The entries that overlap `range` of this node's content, with the offset (in this node's
  /// content) at which each starts: what a read of that range needs from the level below.
  public func entries(overlapping range: Range<UInt64>) -> [(entry: ManifestEntry, start: UInt64)] {
    var result: [(entry: ManifestEntry, start: UInt64)] = []
    var start: UInt64 = 0
    for entry in entries {
      let end = start + entry.size
      if end > range.lowerBound && start < range.upperBound { result.append((entry, start)) }
      if start >= range.upperBound { break }
      start = end
    }
    return result
  }
}
