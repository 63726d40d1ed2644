/// Where a `VersionSet` reads the records it does not keep in memory: a device's database.
///
/// A set with an archive keeps only the heads of each path in memory; every other record is
/// read here when a decision needs it (an ancestry walk, a path's history, retention), so that
/// memory and start-up follow the live library, not the length of its history. Every record
/// inserted into such a set is in the archive already (a device stores a record before it
/// inserts it), and records never leave it.
public protocol VersionArchive: Sendable {
  /// The stored record with this id.
  func record(_ id: VersionID) -> VersionRecord?
  /// The ids of the stored records that name `id` as a parent.
  func followers(of id: VersionID) -> [VersionID]
  /// Every stored record of `path`.
  func records(at path: DocumentPath) -> [VersionRecord]
  /// The ids of the stored records whose content is the blob `hash`.
  func versions(withContent hash: ContentHash) -> [VersionID]
  /// Whether retention released the content of version `id`.
  func isReleased(_ id: VersionID) -> Bool
  /// Whether `path` has a file or symlink version that some stored version follows and that
  /// retention has not released: one that `.history` lists. Kept by the archive, so that a save
  /// does not read a long history to answer it.
  func hasEarlierVersions(at path: DocumentPath) -> Bool
}
