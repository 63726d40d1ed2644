/// Every version record a device knows, with the heads of each path kept up to date.
///
/// Records may arrive in any order, twice, or before their parents: a version is a head when no
/// known record names it as a parent, which needs no causal delivery. Adding a record costs
/// O(parents), so the whole set is built in O(records).
///
/// Without an archive the set holds every record in memory. With one (see `VersionArchive`) it
/// holds only the heads, and reads older records from the archive on demand: a device's set
/// then costs memory for its live library, whatever the length of its history.
public struct VersionSet: Sendable {
  /// The records held in memory: every known one, or only the heads when there is an archive.
  public private(set) var records: [VersionID: VersionRecord] = [:]
  /// Ids that some known record names as a parent (known or not yet arrived); without an
  /// archive only.
  private var referenced: Set<VersionID> = []
  private var headsByPath: [DocumentPath: [VersionID]] = [:]
  /// Every known version of each path, in arrival order, without an archive: what `.history`
  /// lists comes from here (or from the archive).
  private var idsByPath: [DocumentPath: [VersionID]] = [:]
  /// Where the records that are not heads are, when they are not in memory.
  public let archive: (any VersionArchive)?

  public init() { archive = nil }

  public init(_ records: some Sequence<VersionRecord>) {
    archive = nil
    _ = insert(contentsOf: records)
  }

  /// A set whose heads are `heads` and whose other records are in `archive`.
  public init(heads: some Sequence<VersionRecord>, archive: any VersionArchive) {
    self.archive = archive
    for record in heads where records[record.id] == nil {
      records[record.id] = record
      headsByPath[record.path, default: []].append(record.id)
    }
  }

  /// How many records are in memory (every known one when there is no archive).
  public var count: Int { records.count }

  /// Every path that has at least one version (with an archive: at least one head).
  public var paths: Dictionary<DocumentPath, [VersionID]>.Keys { headsByPath.keys }

  public func contains(_ id: VersionID) -> Bool {
    records[id] != nil || archive?.record(id) != nil
  }

  public subscript(id: VersionID) -> VersionRecord? { records[id] ?? archive?.record(id) }

  /// Adds a record already checked by `Integrity`; returns false when it was known.
  @discardableResult
  public mutating func insert(_ record: VersionRecord) -> Bool { add(record) != nil }

  /// Adds a record; the paths whose heads may have changed, nil when it was known.
  private mutating func add(_ record: VersionRecord) -> [DocumentPath]? {
    guard records[record.id] == nil else { return nil }
    var touched = [record.path]
    if let archive {
      // Only heads are in memory: a parent that is not here was no head.
      for parent in record.parents {
        guard let known = records.removeValue(forKey: parent) else { continue }
        removeHead(parent, at: known.path)
        touched.append(known.path)
      }
      if archive.followers(of: record.id).isEmpty {
        records[record.id] = record
        headsByPath[record.path, default: []].append(record.id)
      } else if headsByPath[record.path] == nil {
        headsByPath[record.path] = []
      }
      return touched
    }
    records[record.id] = record
    idsByPath[record.path, default: []].append(record.id)
    for parent in record.parents {
      referenced.insert(parent)
      if let known = records[parent] {
        removeHead(parent, at: known.path)
        touched.append(known.path)
      }
    }
    if !referenced.contains(record.id) {
      headsByPath[record.path, default: []].append(record.id)
    } else if headsByPath[record.path] == nil {
      headsByPath[record.path] = []
    }
    return touched
  }

  /// Adds records; returns the paths whose heads may have changed.
  @discardableResult
  public mutating func insert(contentsOf records: some Sequence<VersionRecord>) -> Set<
    DocumentPath
  > {
    var touched: Set<DocumentPath> = []
    for record in records {
      if let paths = add(record) { touched.formUnion(paths) }
    }
    return touched
  }

  private mutating func removeHead(_ id: VersionID, at path: DocumentPath) {
    guard var heads = headsByPath[path], let index = heads.firstIndex(of: id) else { return }
    heads.remove(at: index)
    headsByPath[path] = heads
  }

  /// Every known version of `path`, heads included, in arrival order (with an archive, in the
  /// archive's order).
  public func ids(at path: DocumentPath) -> [VersionID] {
    guard let archive else { return idsByPath[path] ?? [] }
    return archive.records(at: path).map(\.id)
  }

  /// Every known version of `path`, heads included, in the order of `ids(at:)`.
  public func records(at path: DocumentPath) -> [VersionRecord] {
    guard let archive else { return (idsByPath[path] ?? []).compactMap { records[$0] } }
    return archive.records(at: path)
  }

  /// The ids of the known versions that name `id` as a parent.
  public func followers(of id: VersionID) -> [VersionID] {
    guard let archive else {
      return records.values.filter { $0.parents.contains(id) }.map(\.id)
    }
    return archive.followers(of: id)
  }

  /// The ids of the known versions whose content is the blob `hash`.
  public func versions(withContent hash: ContentHash) -> [VersionID] {
    guard let archive else {
      return records.values.filter { $0.content.blobHash == hash }.map(\.id)
    }
    return archive.versions(withContent: hash)
  }

  /// The versions of `path` that no known version follows, best first by the winner rule.
  public func heads(at path: DocumentPath) -> [VersionRecord] {
    (headsByPath[path] ?? []).compactMap { records[$0] }.sorted(by: WinnerRule.beats)
  }

  /// The head of `path` that wins (see `WinnerRule`), without sorting the others.
  public func winner(at path: DocumentPath) -> VersionRecord? {
    var best: VersionRecord?
    for id in headsByPath[path] ?? [] {
      guard let record = records[id] else { continue }
      if let current = best, !WinnerRule.beats(record, current) { continue }
      best = record
    }
    return best
  }

  /// The state of one path from its heads alone (see `WinnerRule`).
  public func pathState(at path: DocumentPath) -> PathState? {
    PathState(heads: heads(at: path))
  }

  /// Whether `ancestor` is `id` or one of its ancestors (walks the DAG; for tests and tools).
  public func isAncestor(_ ancestor: VersionID, of id: VersionID) -> Bool {
    var stack = [id]
    var seen: Set<VersionID> = []
    while let next = stack.popLast() {
      if next == ancestor { return true }
      guard seen.insert(next).inserted, let record = self[next] else { continue }
      stack += record.parents
    }
    return false
  }
}

/// The rule that picks one head as current, identically on every device.
///
/// A directory beats a file or symlink (so that nothing inside a folder is hidden by a file
/// created at the same path elsewhere; the file stays a conflict version), content beats a
/// deletion (so a deletion never beats a concurrent edit), then the later modification time,
/// the greater device id, the greater version id.
public enum WinnerRule {
  static func rank(_ kind: VersionKind) -> Int {
    switch kind {
    case .deletion: 0
    case .file, .symlink: 1
    case .directory: 2
    }
  }

  /// Whether `lhs` wins over `rhs`.
  public static func beats(_ lhs: VersionRecord, _ rhs: VersionRecord) -> Bool {
    let (l, r) = (rank(lhs.kind), rank(rhs.kind))
    if l != r { return l > r }
    if lhs.modified != rhs.modified { return lhs.modified > rhs.modified }
    if lhs.deviceID != rhs.deviceID { return lhs.deviceID > rhs.deviceID }
    return lhs.id > rhs.id
  }
}

/// One path's heads, sorted so that the first is the winner.
public struct PathState: Hashable, Sendable {
  /// All heads, winner first.
  public let heads: [VersionRecord]

  init?(heads: [VersionRecord]) {
    guard !heads.isEmpty else { return nil }
    self.heads = heads
  }

  /// The winning head; a deletion when the path holds nothing.
  public var winner: VersionRecord { heads[0] }

  /// Whether the path's own history leaves something there.
  public var isLive: Bool { !winner.content.isDeletion }

  /// The file and symlink heads that lost: the conflict versions. A head whose content equals
  /// the winner's, or that of a better head, is not one: two saves of the same bytes are one
  /// version to a person, whichever device made them (``AutoMerge/sameContent(at:in:)`` makes
  /// them one record).
  public var losingDocuments: [VersionRecord] {
    Self.oneOfEachContent(heads.filter { $0.kind == .file || $0.kind == .symlink })
      .filter { $0 != winner && $0.content != winner.content }
  }

  /// Whether two heads have equal content (the same bytes and executable bit, two folders, two
  /// deletions): a merge of them is due.
  public var hasEqualHeads: Bool {
    guard heads.count > 1 else { return false }
    return Set(heads.map(\.content)).count < heads.count
  }

  /// The first of `records` (in their order) with each content.
  static func oneOfEachContent(_ records: [VersionRecord]) -> [VersionRecord] {
    guard records.count > 1 else { return records }
    var seen: Set<VersionContent> = []
    return records.filter { seen.insert($0.content).inserted }
  }
}

extension VersionSet {
  /// Drops these records for good (`docsync forget`); returns the paths whose heads may have
  /// changed. With an archive, the archive has dropped them already: a parent that no
  /// remaining record follows is read back from it as a head.
  @discardableResult
  public mutating func remove(_ gone: [VersionRecord]) -> Set<DocumentPath> {
    guard let archive else { return remove(Set(gone.map(\.id))) }
    let goneIDs = Set(gone.map(\.id))
    var touched: Set<DocumentPath> = []
    var parents: Set<VersionID> = []
    for record in gone {
      touched.insert(record.path)
      parents.formUnion(record.parents)
      if records.removeValue(forKey: record.id) != nil { removeHead(record.id, at: record.path) }
      if headsByPath[record.path]?.isEmpty == true { headsByPath[record.path] = nil }
    }
    for id in parents.subtracting(goneIDs) where records[id] == nil {
      guard let record = archive.record(id), archive.followers(of: id).isEmpty else { continue }
      records[id] = record
      headsByPath[record.path, default: []].append(id)
      touched.insert(record.path)
    }
    return touched
  }

  /// Drops records for good (`docsync forget`); returns the paths whose heads may have changed.
  /// A record left behind that names a dropped one as its parent becomes a head of its own,
  /// as a record whose parent has not arrived is. O(records): forgetting is rare.
  @discardableResult
  public mutating func remove(_ ids: Set<VersionID>) -> Set<DocumentPath> {
    var touched: Set<DocumentPath> = []
    var unsure: Set<VersionID> = []
    for id in ids {
      guard let record = records.removeValue(forKey: id) else { continue }
      touched.insert(record.path)
      unsure.insert(id)
      unsure.formUnion(record.parents)
      idsByPath[record.path]?.removeAll { $0 == id }
      removeHead(id, at: record.path)
      if idsByPath[record.path]?.isEmpty == true {
        idsByPath[record.path] = nil
        headsByPath[record.path] = nil
      }
    }
    guard !unsure.isEmpty else { return touched }
    // Which of the ids the dropped records named does a remaining record still name?
    var stillNamed: Set<VersionID> = []
    for record in records.values {
      for parent in record.parents where unsure.contains(parent) { stillNamed.insert(parent) }
    }
    for id in unsure where !stillNamed.contains(id) {
      referenced.remove(id)
      if let record = records[id], !(headsByPath[record.path] ?? []).contains(id) {
        headsByPath[record.path, default: []].append(id)
        touched.insert(record.path)
      }
    }
    return touched
  }
}
