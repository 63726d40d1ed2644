/// What a version's content is, as its record will name it: the root of its manifest tree
/// (or, for content of one chunk, that chunk), the tree's height and the content's size.
///
/// Height 0 means `id` is a chunk holding all of the content (every small file, and the empty
/// file as the chunk of no bytes); height n means a ``ManifestNode`` of that height.
public struct ContentRef: Sendable, Hashable {
  public let id: ObjectID
  public let height: UInt8
  public let size: UInt64

  public init(id: ObjectID, height: UInt8, size: UInt64) {
    self.id = id
    self.height = height
    self.size = size
  }

  static let format: UInt8 = 1

  /// Format byte 1, height, the 32-byte id, the size (LEB128).
  public func encoded() -> [UInt8] {
    var out: [UInt8] = [Self.format, height]
    out.append(contentsOf: id.bytes)
    LEB128.append(size, to: &out)
    return out
  }

  public init(decoding bytes: [UInt8]) throws(ManifestError) {
    var reader = ByteReader(bytes)
    let format = try reader.byte()
    guard format == Self.format else { throw .unknownFormat(format) }
    height = try reader.byte()
    guard height <= ManifestNode.maximumHeight else { throw .malformed("height \(height)") }
    id = ObjectID(bytes: try reader.bytes(32))!
    size = try reader.leb128()
    guard reader.isAtEnd else { throw .malformed("bytes after a content reference") }
    guard height == 0 || size > 0 else { throw .malformed("a tree over no bytes") }
  }
}
