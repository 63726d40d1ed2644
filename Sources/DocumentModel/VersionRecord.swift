/// What a version holds: content for files and symlinks, nothing for folders and deletions.
public enum VersionContent: Hashable, Sendable {
  /// A regular file; `executable` is the one mode bit that syncs.
  case file(hash: ContentHash, size: UInt64, executable: Bool)
  case directory
  /// A symbolic link whose target bytes are the blob `hash`.
  case symlink(hash: ContentHash, size: UInt64)
  case deletion

  /// The kind of version, in the order that the canonical encoding uses.
  public var kind: VersionKind {
    switch self {
    case .file: .file
    case .directory: .directory
    case .symlink: .symlink
    case .deletion: .deletion
    }
  }

  /// The blob this version needs, if any.
  public var blobHash: ContentHash? {
    switch self {
    case .file(let hash, _, _), .symlink(let hash, _): hash
    case .directory, .deletion: nil
    }
  }

  public var isDeletion: Bool { self == .deletion }

  /// The size of a file's or symlink's content; nothing for folders and deletions.
  public var size: UInt64? {
    switch self {
    case .file(_, let size, _), .symlink(_, let size): size
    case .directory, .deletion: nil
    }
  }
}

/// The four kinds of version record.
public enum VersionKind: UInt8, Sendable, Hashable {
  case file = 1
  case directory = 2
  case symlink = 3
  case deletion = 4
}

/// Where a renamed document came from: the path and the version it had there.
public struct RenameOrigin: Hashable, Sendable {
  public let path: DocumentPath
  public let version: VersionID
  public init(path: DocumentPath, version: VersionID) {
    self.path = path
    self.version = version
  }
}

/// An immutable version of one path; its id is the SHA-256 of its canonical encoding.
///
/// A value with one reference inside: the fields live in one shared, immutable object, so the
/// several places that hold a head (the version set, the library state, a path's state) hold
/// one copy of it, 8 bytes each, rather than 200 bytes each (a large library keeps one record
/// per document in memory; dictionaries of inline records cost more than twice that again in
/// empty buckets).
public struct VersionRecord: Hashable, Sendable, CustomStringConvertible {
  private final class Fields: Sendable {
    let id: VersionID
    let path: DocumentPath
    let content: VersionContent
    let parents: [VersionID]
    let modified: HLCTimestamp
    let deviceID: DeviceID
    let deviceName: String
    let origin: RenameOrigin?
    let contentTime: Int64?
    let chunks: ContentRoot?

    init(
      id: VersionID, path: DocumentPath, content: VersionContent, parents: [VersionID],
      modified: HLCTimestamp, deviceID: DeviceID, deviceName: String, origin: RenameOrigin?,
      contentTime: Int64?, chunks: ContentRoot?
    ) {
      self.id = id
      self.path = path
      self.content = content
      self.parents = parents
      self.modified = modified
      self.deviceID = deviceID
      self.deviceName = deviceName
      self.origin = origin
      self.contentTime = contentTime
      self.chunks = chunks
    }
  }

  private let fields: Fields

  public var id: VersionID { fields.id }
  public var path: DocumentPath { fields.path }
  public var content: VersionContent { fields.content }
  /// Versions of the same path this one follows, sorted and without duplicates.
  public var parents: [VersionID] { fields.parents }
  public var modified: HLCTimestamp { fields.modified }
  public var deviceID: DeviceID { fields.deviceID }
  /// The device's name as people read it; sanitised only when it becomes a file name.
  public var deviceName: String { fields.deviceName }
  public var origin: RenameOrigin? { fields.origin }
  /// The file's own modification time in nanoseconds since the epoch, as the device that
  /// saved it had it; `modified` orders versions, this is what a file's mtime shows. Nil for
  /// folders and deletions.
  public var contentTime: Int64? { fields.contentTime }
  /// Where a file's content lives as chunks on the hub; nil for a version whose content moves
  /// as one blob (every version made before chunks, merges, folders, symlinks, deletions).
  public var chunks: ContentRoot? { fields.chunks }

  /// Builds a record and derives its id from its canonical encoding.
  public init(
    path: DocumentPath, content: VersionContent, parents: [VersionID], modified: HLCTimestamp,
    deviceID: DeviceID, deviceName: String, origin: RenameOrigin? = nil,
    contentTime: Int64? = nil, chunks: ContentRoot? = nil
  ) {
    precondition(!path.isRoot, "the root of the library has no versions")
    let sortedParents = Array(Set(parents)).sorted()
    let draft = VersionRecord(
      storedID: VersionID(Digest256(bytes: [UInt8](repeating: 0, count: 32))!), path: path,
      content: content, parents: sortedParents, modified: modified, deviceID: deviceID,
      deviceName: deviceName, origin: origin, contentTime: contentTime, chunks: chunks)
    self.init(
      storedID: VersionID(.sha256(draft.encoded)), path: path, content: content,
      parents: sortedParents, modified: modified, deviceID: deviceID, deviceName: deviceName,
      origin: origin, contentTime: contentTime, chunks: chunks)
  }

  /// Rebuilds a record with an id read from storage, without checking it; check it with
  /// `Integrity.verify(_:)` before trusting it.
  public init(
    storedID: VersionID, path: DocumentPath, content: VersionContent, parents: [VersionID],
    modified: HLCTimestamp, deviceID: DeviceID, deviceName: String, origin: RenameOrigin?,
    contentTime: Int64? = nil, chunks: ContentRoot? = nil
  ) {
    fields = Fields(
      id: storedID, path: path, content: content, parents: parents, modified: modified,
      deviceID: deviceID, deviceName: deviceName, origin: origin, contentTime: contentTime,
      chunks: chunks)
  }

  public var kind: VersionKind { content.kind }

  /// The canonical bytes; their SHA-256 is `id`.
  public var encoded: [UInt8] { CanonicalEncoding.fields(of: self) }

  /// Decodes canonical bytes, refusing them unless their hash is `expectedID` and they are in
  /// canonical form (so one record has exactly one encoding).
  public init(decoding bytes: [UInt8], expectedID: VersionID) throws(IntegrityError) {
    guard VersionID(.sha256(bytes)) == expectedID else {
      throw .recordHashMismatch(expected: expectedID)
    }
    var reader = CanonicalEncoding.Reader(bytes: bytes)
    let decoded = reader.record(id: expectedID)
    // A field this docsync does not know, in a record whose bytes hash to its id: a newer
    // docsync made it, and skipping it would hide versions from this device for good.
    if let field = reader.newerField { throw .newerFormat(expectedID, field: field) }
    guard let decoded, reader.atEnd, CanonicalEncoding.fields(of: decoded) == bytes
    else { throw .malformedRecord(expectedID) }
    self = decoded
  }

  public var description: String {
    "\(id.shortHex) \(path) \(kind) parents=\(parents.map(\.shortHex)) t=\(modified) dev=\(deviceName)"
  }

  // Ids are hashes of every field, so equal ids mean equal records.
  public static func == (lhs: VersionRecord, rhs: VersionRecord) -> Bool { lhs.id == rhs.id }
  public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// Why a record or blob was refused.
public enum IntegrityError: Error, Hashable, Sendable, CustomStringConvertible {
  case recordHashMismatch(expected: VersionID)
  case malformedRecord(VersionID)
  /// A record with a field that a later docsync added (after the ones this one knows).
  case newerFormat(VersionID, field: UInt8)
  case blobHashMismatch(expected: ContentHash)

  public var description: String {
    switch self {
    case .recordHashMismatch: "its bytes do not hash to its id"
    case .malformedRecord: "its bytes are not a version record in canonical form"
    case .newerFormat(_, let field):
      "a newer docsync made it (record field \(field)): upgrade docsync on this device"
    case .blobHashMismatch(let hash): "the content does not hash to \(hash.hex)"
    }
  }
}

/// The checks every record and blob passes before it is applied (invariant 5).
public enum Integrity {
  /// Recomputes a record's id from its fields.
  public static func verify(_ record: VersionRecord) throws(IntegrityError) {
    let recomputed = VersionID(.sha256(CanonicalEncoding.fields(of: record)))
    guard recomputed == record.id, record.parents == Array(Set(record.parents)).sorted() else {
      throw .recordHashMismatch(expected: record.id)
    }
  }

  /// Checks that `blob` has the hash `hash`.
  public static func verify(blob: [UInt8], hash: ContentHash) throws(IntegrityError) {
    guard ContentHash(of: blob) == hash else { throw .blobHashMismatch(expected: hash) }
  }
}

/// The canonical encoding: fixed field order, big-endian integers, length-prefixed byte
/// strings, sorted parents. Version 1 is tagged so that a later encoding gets different ids.
enum CanonicalEncoding {
  static let magic = Array("docsync.version.1".utf8)

  static func fields(of record: VersionRecord) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(128 + record.parents.count * 32)
    appendBytes(magic, to: &out)
    out.append(record.kind.rawValue)
    appendPath(record.path, to: &out)
    appendInt(UInt64(record.parents.count), width: 4, to: &out)
    for parent in record.parents { out += parent.bytes }
    switch record.content {
    case .file(let hash, let size, let executable):
      out += hash.bytes
      appendInt(size, width: 8, to: &out)
      out.append(executable ? 1 : 0)
    case .symlink(let hash, let size):
      out += hash.bytes
      appendInt(size, width: 8, to: &out)
    case .directory, .deletion:
      break
    }
    appendInt(record.modified.wallMilliseconds, width: 8, to: &out)
    appendInt(UInt64(record.modified.counter), width: 4, to: &out)
    appendInt(record.deviceID.high, width: 8, to: &out)
    appendInt(record.deviceID.low, width: 8, to: &out)
    appendBytes(Array(record.deviceName.utf8), to: &out)
    if let origin = record.origin {
      out.append(1)
      appendPath(origin.path, to: &out)
      out += origin.version.bytes
    } else {
      out.append(0)
    }
    if let contentTime = record.contentTime {
      out.append(1)
      appendInt(UInt64(bitPattern: contentTime), width: 8, to: &out)
    } else {
      out.append(0)
    }
    // Only when present, so that every record made before chunks keeps its encoding and id.
    // The tag is the tree's id scheme (1 BLAKE2b, 2 BLAKE3): a docsync that knows only BLAKE2b
    // trees reads tag 2 as a newer field and asks to be upgraded, instead of checking BLAKE3
    // objects with the wrong hash.
    if let chunks = record.chunks {
      out.append(chunks.scheme.rawValue)
      out.append(chunks.height)
      out += chunks.id.bytes
      appendInt(chunks.size, width: 8, to: &out)
    }
    return out
  }

  static func appendInt(_ value: UInt64, width: Int, to out: inout [UInt8]) {
    for index in stride(from: width - 1, through: 0, by: -1) {
      out.append(UInt8(truncatingIfNeeded: value >> UInt64(index * 8)))
    }
  }

  static func appendBytes(_ bytes: [UInt8], to out: inout [UInt8]) {
    appendInt(UInt64(bytes.count), width: 4, to: &out)
    out += bytes
  }

  static func appendPath(_ path: DocumentPath, to out: inout [UInt8]) {
    appendInt(UInt64(path.components.count), width: 4, to: &out)
    for component in path.components { appendBytes(component, to: &out) }
  }

  struct Reader {
    let bytes: [UInt8]
    var offset = 0

    var atEnd: Bool { offset == bytes.count }
    /// The tag of the first optional field this docsync does not know, when the record has
    /// one: optional fields follow the fixed ones, each a tag byte and its value, tags
    /// rising (1 and 2, the chunks of a file's content named by BLAKE2b or BLAKE3, are the
    /// only ones so far).
    var newerField: UInt8?

    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
      guard count >= 0, bytes.count - offset >= count else { return nil }
      defer { offset += count }
      return bytes[offset..<offset + count]
    }

    mutating func int(width: Int) -> UInt64? {
      guard let slice = take(width) else { return nil }
      return slice.reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func byteString() -> [UInt8]? {
      guard let count = int(width: 4), let slice = take(Int(count)) else { return nil }
      return Array(slice)
    }

    mutating func digest() -> Digest256? {
      guard let slice = take(32) else { return nil }
      return Digest256(bytes: slice)
    }

    mutating func path() -> DocumentPath? {
      guard let count = int(width: 4), count <= bytes.count else { return nil }
      var components: [[UInt8]] = []
      for _ in 0..<count {
        guard let component = byteString(), !component.isEmpty,
          !component.contains(UInt8(ascii: "/"))
        else { return nil }
        components.append(component)
      }
      return DocumentPath(components: components)
    }

    mutating func record(id: VersionID) -> VersionRecord? {
      guard byteString() == CanonicalEncoding.magic, let kindByte = take(1)?.first,
        let kind = VersionKind(rawValue: kindByte), let recordPath = self.path(),
        !recordPath.isRoot,
        let parentCount = int(width: 4), parentCount <= bytes.count / 32
      else { return nil }
      var parents: [VersionID] = []
      for _ in 0..<parentCount {
        guard let digest = digest() else { return nil }
        parents.append(VersionID(digest))
      }
      let content: VersionContent
      switch kind {
      case .file:
        guard let hash = digest(), let size = int(width: 8), let flag = take(1)?.first, flag <= 1
        else { return nil }
        content = .file(hash: ContentHash(hash), size: size, executable: flag == 1)
      case .symlink:
        guard let hash = digest(), let size = int(width: 8) else { return nil }
        content = .symlink(hash: ContentHash(hash), size: size)
      case .directory: content = .directory
      case .deletion: content = .deletion
      }
      guard let wall = int(width: 8), let counter = int(width: 4), let high = int(width: 8),
        let low = int(width: 8), let name = byteString(), let hasOrigin = take(1)?.first
      else { return nil }
      var origin: RenameOrigin?
      if hasOrigin == 1 {
        guard let originPath = self.path(), let originID = digest() else { return nil }
        origin = RenameOrigin(path: originPath, version: VersionID(originID))
      } else if hasOrigin != 0 {
        return nil
      }
      var contentTime: Int64?
      switch take(1)?.first {
      case 1:
        guard let time = int(width: 8) else { return nil }
        contentTime = Int64(bitPattern: time)
      case 0: break
      default: return nil
      }
      var chunks: ContentRoot?
      if !atEnd, let scheme = ObjectIDScheme(rawValue: bytes[offset]) {
        offset += 1
        guard let height = take(1)?.first, let root = digest(), let size = int(width: 8)
        else { return nil }
        chunks = ContentRoot(id: root, height: height, size: size, scheme: scheme)
      }
      if !atEnd {
        // Optional fields rise; the chunks field takes the tags of the id schemes.
        let lastKnown = ObjectIDScheme.allCases.map(\.rawValue).max()!
        guard bytes[offset] > lastKnown else { return nil }
        newerField = bytes[offset]
        return nil
      }
      guard let deviceName = String(validating: name, as: UTF8.self) else { return nil }
      return VersionRecord(
        storedID: id, path: recordPath, content: content, parents: parents,
        modified: HLCTimestamp(wallMilliseconds: wall, counter: UInt32(counter)),
        deviceID: DeviceID(high: high, low: low), deviceName: deviceName, origin: origin,
        contentTime: contentTime, chunks: chunks)
    }
  }
}
