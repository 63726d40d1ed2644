/// What changes between two versions of a package, entry by entry, and which file contents the
/// newer one needs that the older one does not hold.
public struct PackageDiff: Hashable, Sendable {
  /// Entries of the newer version at paths the older one does not have, sorted by path.
  public let added: [PackageEntry]
  /// Entries of the older version at paths the newer one does not have, sorted by path.
  public let removed: [PackageEntry]
  /// Entries of the newer version whose bytes, kind or mode differ from the older one's at
  /// the same path, sorted by path.
  public let changed: [PackageEntry]
  /// Entries of the newer version that hold what the older one held at the same path, with
  /// another time (or a chunk tree named on one side only).
  public let retimed: [PackageEntry]
  /// The file contents that added and changed entries name and that the older version holds
  /// nowhere, sorted: all that has to move between devices. Everything else the newer version
  /// holds is content the older one already has, at the same path or another (a file moved
  /// inside the package, or git's object packed).
  public let newContent: [ContentHash]

  init(from older: PackageManifest, to newer: PackageManifest) {
    var added: [PackageEntry] = []
    var removed: [PackageEntry] = []
    var changed: [PackageEntry] = []
    var retimed: [PackageEntry] = []
    var old = older.entries[...]
    var new = newer.entries[...]
    // Both lists are sorted by path: one walk pairs them.
    while let a = old.first, let b = new.first {
      if a.path < b.path {
        removed.append(a)
        old = old.dropFirst()
      } else if b.path < a.path {
        added.append(b)
        new = new.dropFirst()
      } else {
        if a != b && b.holdsTheSame(as: a) {
          retimed.append(b)
        } else if a != b {
          changed.append(b)
        }
        old = old.dropFirst()
        new = new.dropFirst()
      }
    }
    removed += old
    added += new
    let held = older.fileHashes
    var needed: Set<ContentHash> = []
    for entry in added + changed {
      if let hash = entry.fileHash, !held.contains(hash) { needed.insert(hash) }
    }
    self.added = added
    self.removed = removed
    self.changed = changed
    self.retimed = retimed
    self.newContent = needed.sorted()
  }

  /// Whether the two versions hold the same entries exactly.
  public var isEmpty: Bool {
    added.isEmpty && removed.isEmpty && changed.isEmpty && retimed.isEmpty
  }
}
