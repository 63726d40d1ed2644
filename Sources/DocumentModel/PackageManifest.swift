/// The content of one package version: a snapshot of every file, folder and symlink in the
/// package's folder, sorted by path (docs/packages.md).
///
/// Its canonical encoding (``encoded``, format 1) is what moves and is stored, as the content
/// of the package's version; the SHA-256 of those bytes (``contentHash``) names the version's
/// content as a file's hash names a file's. Files are named by their own content hash and
/// chunk root, so the files a new version did not change are the very contents the version
/// before named: nothing of them is uploaded, fetched or stored again (``PackageDiff``).
public struct PackageManifest: Hashable, Sendable {
  /// The format byte this docsync writes, and the newest it reads.
  public static let format: UInt8 = 1

  /// An empty folder.
  public static let empty = PackageManifest(checked: [])

  /// Sorted by path (component by component, as bytes), so that a folder comes before what it
  /// holds.
  public let entries: [PackageEntry]

  private init(checked entries: [PackageEntry]) { self.entries = entries }

  /// The manifest of `entries`, in any order. Refused: a duplicate path, an entry whose folder
  /// is not listed as a folder, and any entry that no device makes (a name that is not one, a
  /// mode beyond 0o777, a chunk tree that does not fit its file, a time on a folder).
  public init(entries: [PackageEntry]) throws(PackageManifestError) {
    try self.init(sorted: entries.sorted { $0.path < $1.path })
  }

  /// Entries already sorted; the decoder calls this to refuse what is out of order.
  init(sorted entries: [PackageEntry]) throws(PackageManifestError) {
    var folders: Set<DocumentPath> = []
    var previous: DocumentPath?
    for entry in entries {
      if let previous, !(previous < entry.path) {
        throw previous == entry.path
          ? .invalidEntry(entry.path, "listed twice") : .malformed("entries out of order")
      }
      previous = entry.path
      if let problem = entry.problem() { throw .invalidEntry(entry.path, problem) }
      if entry.path.components.count > 1, !folders.contains(entry.path.parent) {
        throw .invalidEntry(entry.path, "its folder is not listed as a folder")
      }
      if entry.content == .folder { folders.insert(entry.path) }
    }
    self.entries = entries
  }

  /// The entry at `path`, by binary search.
  public func entry(at path: DocumentPath) -> PackageEntry? {
    var low = 0
    var high = entries.count
    while low < high {
      let middle = (low + high) / 2
      if entries[middle].path < path { low = middle + 1 } else { high = middle }
    }
    return low < entries.count && entries[low].path == path ? entries[low] : nil
  }

  /// The SHA-256 of ``encoded``: the package version's content identity.
  public var contentHash: ContentHash { ContentHash(of: encoded) }

  /// Every file content the manifest names.
  public var fileHashes: Set<ContentHash> { Set(entries.compactMap(\.fileHash)) }

  /// The bytes of every file, counted once per entry.
  public var fileBytes: UInt64 {
    entries.reduce(0) { total, entry in
      if case .file(_, let size, _) = entry.content { return total + size }
      return total
    }
  }

  /// This manifest with `changes` made: an entry for a path puts it there (in place of what
  /// was), nil removes the path and everything below it. How a new snapshot is made from the
  /// last one: only what changed since is read and hashed again, every other entry carries over.
  public func applying(_ changes: [DocumentPath: PackageEntry?]) throws(PackageManifestError)
    -> PackageManifest
  {
    var kept: [PackageEntry] = []
    kept.reserveCapacity(entries.count + changes.count)
    // What lies below a removed folder, or below a folder a file or symlink replaced, goes with
    // it. A folder's contents follow it in the sorted list, so one walk finds them.
    var dropBelow: DocumentPath?
    for entry in entries {
      if let folder = dropBelow, entry.path.isEqualOrDescendant(of: folder) { continue }
      dropBelow = nil
      guard let change = changes[entry.path] else {
        kept.append(entry)
        continue
      }
      if change?.content != .folder { dropBelow = entry.path }
    }
    for case (let path, let entry?) in changes {
      guard entry.path == path else { throw .invalidEntry(path, "changed under another path") }
      kept.append(entry)
    }
    return try PackageManifest(entries: kept)
  }

  /// Whether `other` lists the same entries with the same bytes and modes, whatever their
  /// times: two devices that made the same package (the same `git fetch` on both, the same
  /// copy) made one version, not a conflict, as identical saves of a document are.
  public func holdsTheSame(as other: PackageManifest) -> Bool {
    entries.count == other.entries.count
      && zip(entries, other.entries).allSatisfy { $0.path == $1.path && $0.holdsTheSame(as: $1) }
  }

  /// What changes from this manifest to `newer`.
  public func diff(to newer: PackageManifest) -> PackageDiff {
    PackageDiff(from: self, to: newer)
  }
}
