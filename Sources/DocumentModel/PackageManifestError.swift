/// Why bytes or entries are not a package manifest; each reads as one line of a log.
public enum PackageManifestError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The bytes end inside a field.
  case truncated
  /// The bytes are not a manifest this docsync could have made (the reason says where).
  case malformed(String)
  /// A format byte from a later docsync.
  case newerFormat(UInt8)
  /// An entry field from a later docsync (its tag).
  case newerField(UInt8)
  /// An entry that no device makes (duplicate, without its folder, out of range).
  case invalidEntry(DocumentPath, String)

  public var description: String {
    switch self {
    case .truncated: "package manifest: the bytes end inside an entry"
    case .malformed(let why): "package manifest: \(why)"
    case .newerFormat(let format):
      "package manifest of format \(format), made by a newer docsync: upgrade docsync on this device"
    case .newerField(let tag):
      "package manifest with entry field \(tag), made by a newer docsync: upgrade docsync on this device"
    case .invalidEntry(let path, let why):
      "package manifest: entry \(RecordCheck.printable(path.bytes)): \(why)"
    }
  }
}
