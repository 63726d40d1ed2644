import DocumentModel

/// A record's ``ContentRoot`` as the content layer reads and stores it: the root's id as an
/// ``ObjectID``, and the reference's encoding kept beside a device's chunk lists.
///
/// Height 0 means the id is a chunk holding all of the content (every small file, and the
/// empty file as the chunk of no bytes); height n means a ``ManifestNode`` of that height.
extension ContentRoot {
  public init(id: ObjectID, height: UInt8, size: UInt64, scheme: ObjectIDScheme) {
    self.init(id: id.digest, height: height, size: size, scheme: scheme)
  }

  /// The root's id, as the store and the hub name objects.
  public var object: ObjectID { ObjectID(id) }

  /// The format byte, then height, the 32-byte id, the size (LEB128). The format byte is the
  /// id scheme's number (1 BLAKE2b, as every list kept before BLAKE3; 2 BLAKE3).
  public func encoded() -> [UInt8] {
    var out: [UInt8] = [scheme.rawValue, height]
    out.append(contentsOf: id.bytes)
    LEB128.append(size, to: &out)
    return out
  }

  public init(decoding bytes: [UInt8]) throws(ManifestError) {
    var reader = ByteReader(bytes)
    let format = try reader.byte()
    guard let scheme = ObjectIDScheme(rawValue: format) else { throw .unknownFormat(format) }
    let height = try reader.byte()
    guard height <= ManifestNode.maximumHeight else { throw .malformed("height \(height)") }
    let id = ObjectID(bytes: try reader.bytes(32))!
    let size = try reader.leb128()
    guard reader.isAtEnd else { throw .malformed("bytes after a content reference") }
    guard height == 0 || size > 0 else { throw .malformed("a tree over no bytes") }
    self.init(id: id, height: height, size: size, scheme: scheme)
  }
}
