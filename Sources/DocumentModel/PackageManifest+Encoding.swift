/// The canonical encoding of a package manifest, format 1. Integers are big-endian and of fixed
/// width, byte strings and paths are length-prefixed, as in version records
/// (``CanonicalEncoding``), so one manifest has exactly one encoding and one hash.
///
/// ```
/// format            u8 (1)
/// entry count       u32
/// each entry, sorted by path:
///   path            u32 component count, then each component as u32 length and bytes
///   kind            u8 (1 file, 2 folder, 3 symlink: VersionKind's numbers)
///   mode            u16
///   file            32-byte SHA-256, u64 size, i64 time (ns since the epoch)
///   symlink         u32 length and target bytes, i64 time
///   optional fields tag u8 and value, tags rising; a file's chunk tree takes the tag of its
///                   id scheme (1 BLAKE2b, 2 BLAKE3): u8 height, 32-byte id, u64 size
///   end             u8 0
/// ```
///
/// A later docsync adds fields with higher tags. This one refuses an entry with a tag it does
/// not know as ``PackageManifestError/newerField(_:)`` (and a later format byte as
/// ``PackageManifestError/newerFormat(_:)``), never as damage and never by skipping it, as it
/// treats a version record with a newer field: the engine then waits for an upgrade instead of
/// applying a package without what the newer field says.
extension PackageManifest {
  public var encoded: [UInt8] {
    var out: [UInt8] = [Self.format]
    out.reserveCapacity(5 + entries.count * 72)
    CanonicalEncoding.appendInt(UInt64(entries.count), width: 4, to: &out)
    for entry in entries {
      CanonicalEncoding.appendPath(entry.path, to: &out)
      out.append(entry.kind.rawValue)
      CanonicalEncoding.appendInt(UInt64(entry.mode), width: 2, to: &out)
      switch entry.content {
      case .file(let hash, let size, let chunks):
        out += hash.bytes
        CanonicalEncoding.appendInt(size, width: 8, to: &out)
        CanonicalEncoding.appendInt(UInt64(bitPattern: entry.modified ?? 0), width: 8, to: &out)
        if let chunks {
          out.append(chunks.scheme.rawValue)
          out.append(chunks.height)
          out += chunks.id.bytes
          CanonicalEncoding.appendInt(chunks.size, width: 8, to: &out)
        }
      case .symlink(let target):
        CanonicalEncoding.appendBytes(target, to: &out)
        CanonicalEncoding.appendInt(UInt64(bitPattern: entry.modified ?? 0), width: 8, to: &out)
      case .folder:
        break
      }
      out.append(0)
    }
    return out
  }

  /// Decodes ``encoded`` bytes, checking everything: a manifest comes from another device.
  public init(decoding bytes: [UInt8]) throws(PackageManifestError) {
    var reader = CanonicalEncoding.Reader(bytes: bytes)
    guard let format = reader.take(1)?.first else { throw .truncated }
    guard format <= Self.format else { throw .newerFormat(format) }
    guard format == Self.format else { throw .malformed("unknown format \(format)") }
    guard let count = reader.int(width: 4) else { throw .truncated }
    // Every entry takes at least 8 bytes (an empty path, kind, mode, end): a count beyond that
    // is a lie, and must not size an allocation.
    guard count <= UInt64(bytes.count / 8) else {
      throw .malformed("\(count) entries in \(bytes.count) bytes")
    }
    var entries: [PackageEntry] = []
    entries.reserveCapacity(Int(count))
    for _ in 0..<count { entries.append(try Self.entry(&reader)) }
    guard reader.atEnd else { throw .malformed("bytes after the last entry") }
    try self.init(sorted: entries)
  }

  private static func entry(_ reader: inout CanonicalEncoding.Reader)
    throws(PackageManifestError) -> PackageEntry
  {
    guard let path = reader.path() else {
      throw reader.atEnd ? .truncated : .malformed("a path that is not one")
    }
    guard let kindByte = reader.take(1)?.first, let mode = reader.int(width: 2) else {
      throw .truncated
    }
    let content: PackageEntry.Content
    var modified: Int64?
    switch VersionKind(rawValue: kindByte) {
    case .file:
      guard let hash = reader.digest(), let size = reader.int(width: 8),
        let time = reader.int(width: 8)
      else { throw .truncated }
      modified = Int64(bitPattern: time)
      var chunks: ContentRoot?
      if let tag = reader.bytes.dropFirst(reader.offset).first,
        let scheme = ObjectIDScheme(rawValue: tag)
      {
        reader.offset += 1
        guard let height = reader.take(1)?.first, let id = reader.digest(),
          let treeSize = reader.int(width: 8)
        else { throw .truncated }
        chunks = ContentRoot(id: id, height: height, size: treeSize, scheme: scheme)
      }
      content = .file(hash: ContentHash(hash), size: size, chunks: chunks)
    case .symlink:
      guard let target = reader.byteString(), let time = reader.int(width: 8) else {
        throw .truncated
      }
      modified = Int64(bitPattern: time)
      content = .symlink(target: target)
    case .directory:
      content = .folder
    case .deletion, nil:
      throw .malformed("entry kind \(kindByte)")
    }
    guard let end = reader.take(1)?.first else { throw .truncated }
    if end != 0 {
      // Tags rise: a known tag here is out of place (a second chunk tree, or one on a folder or
      // symlink); a higher one is a field this docsync does not know.
      let lastKnown = ObjectIDScheme.allCases.map(\.rawValue).max()!
      guard end > lastKnown else {
        throw .invalidEntry(path, "field \(end) where it cannot be")
      }
      throw .newerField(end)
    }
    return PackageEntry(path: path, content: content, mode: UInt16(mode), modified: modified)
  }
}
