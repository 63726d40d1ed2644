/// The earlier versions of every document, as `.history` shows them: for each path, its file
/// and symlink versions that some known version follows (so neither the current version nor a
/// conflict version) and that retention has not released, and for each folder, the names below
/// it that lead to such versions.
///
/// Kept up to date from the paths that `VersionSet.insert(contentsOf:)` reports, so a listing
/// of `.history/<folder>/` costs O(its entries) and an update O(versions of the touched path ×
/// its depth), whatever the length of the whole library's history.
public struct HistoryIndex: Sendable, Equatable {
  /// The earlier versions of each path that has some, in arrival order.
  private var versions: [DocumentPath: [VersionID]] = [:]
  /// For each folder, each child name and how many paths with earlier versions are at or below
  /// it.
  private var below: [DocumentPath: [[UInt8]: Int]] = [:]
  /// Versions whose content retention let go: their records stay (they carry the ancestry
  /// every device needs to tell heads), but nothing shows them.
  public private(set) var released: Set<VersionID> = []

  public init() {}

  /// Builds the index of a whole set in O(records × depth).
  public init(_ set: VersionSet, released: Set<VersionID> = []) {
    self.released = released
    update(from: set, touched: set.paths)
  }

  /// Takes versions out of the history for good: retention released them.
  public mutating func release(_ ids: some Sequence<VersionID>, in set: VersionSet) {
    var touched: Set<DocumentPath> = []
    for id in ids where released.insert(id).inserted {
      if let record = set[id] { touched.insert(record.path) }
    }
    update(from: set, touched: touched)
  }

  /// Recomputes the earlier versions of `touched` paths.
  public mutating func update(from set: VersionSet, touched: some Sequence<DocumentPath>) {
    for path in touched where !path.isRoot {
      let heads = Set(set.heads(at: path).map(\.id))
      let earlier = set.ids(at: path).filter { id in
        guard !heads.contains(id), !released.contains(id), let record = set[id] else {
          return false
        }
        return record.kind == .file || record.kind == .symlink
      }
      let had = versions[path] != nil
      versions[path] = earlier.isEmpty ? nil : earlier
      if had != !earlier.isEmpty { adjustAncestors(of: path, by: earlier.isEmpty ? -1 : 1) }
    }
  }

  private mutating func adjustAncestors(of path: DocumentPath, by delta: Int) {
    var folder = DocumentPath.root
    for component in path.components {
      let count = (below[folder]?[component] ?? 0) + delta
      below[folder, default: [:]][component] = count > 0 ? count : nil
      if below[folder]?.isEmpty == true { below[folder] = nil }
      folder = folder.appending(component)
    }
  }

  /// The earlier versions of the document at `path`, in arrival order.
  public func earlierVersions(at path: DocumentPath) -> [VersionID] { versions[path] ?? [] }

  /// The names in `.history/<folder>/` that are folders: the paths below it with earlier
  /// versions (a document's own folder among them).
  public func folders(in folder: DocumentPath) -> [[UInt8]] {
    (below[folder] ?? [:]).keys.sorted { $0.lexicographicallyPrecedes($1) }
  }

  /// Whether `.history/<path>/` exists.
  public func hasFolder(_ path: DocumentPath) -> Bool {
    path.isRoot || below[path.parent]?[path.name] != nil
  }

  /// Every path that has earlier versions.
  public var paths: Dictionary<DocumentPath, [VersionID]>.Keys { versions.keys }
}
