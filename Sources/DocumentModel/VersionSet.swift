/// Every version record a device knows, with the heads of each path kept up to date.
///
/// Records may arrive in any order, twice, or before their parents: a version is a head when no
/// known record names it as a parent, which needs no causal delivery. Adding a record costs
/// O(parents), so the whole set is built in O(records).
public struct VersionSet: Sendable {
  public private(set) var records: [VersionID: VersionRecord] = [:]
  /// Ids that some known record names as a parent (known or not yet arrived).
  private var referenced: Set<VersionID> = []
  private var headsByPath: [DocumentPath: [VersionID]] = [:]
  /// Every known version of each path, in arrival order: what `.history` lists comes from here.
  private var idsByPath: [DocumentPath: [VersionID]] = [:]

  public init() {}

  public init(_ records: some Sequence<VersionRecord>) {
    _ = insert(contentsOf: records)
  }

  public var count: Int { records.count }

  /// Every path that has at least one version.
  public var paths: Dictionary<DocumentPath, [VersionID]>.Keys { headsByPath.keys }

  public func contains(_ id: VersionID) -> Bool { records[id] != nil }

  public subscript(id: VersionID) -> VersionRecord? { records[id] }

  /// Adds a record already checked by `Integrity`; returns false when it was known.
  @discardableResult
  public mutating func insert(_ record: VersionRecord) -> Bool {
    guard records[record.id] == nil else { return false }
    records[record.id] = record
    idsByPath[record.path, default: []].append(record.id)
    for parent in record.parents {
      referenced.insert(parent)
      if let known = records[parent] { removeHead(parent, at: known.path) }
    }
    if !referenced.contains(record.id) {
      headsByPath[record.path, default: []].append(record.id)
    } else if headsByPath[record.path] == nil {
      headsByPath[record.path] = []
    }
    return true
  }

  /// Adds records; returns the paths whose heads may have changed.
  @discardableResult
  public mutating func insert(contentsOf records: some Sequence<VersionRecord>) -> Set<
    DocumentPath
  > {
    var touched: Set<DocumentPath> = []
    for record in records where insert(record) {
      touched.insert(record.path)
      for parent in record.parents {
        if let known = self.records[parent] { touched.insert(known.path) }
      }
    }
    return touched
  }

  private mutating func removeHead(_ id: VersionID, at path: DocumentPath) {
    guard var heads = headsByPath[path], let index = heads.firstIndex(of: id) else { return }
    heads.remove(at: index)
    headsByPath[path] = heads
  }

  /// Every known version of `path`, heads included, in arrival order.
  public func ids(at path: DocumentPath) -> [VersionID] { idsByPath[path] ?? [] }

  /// The versions of `path` that no known version follows, best first by the winner rule.
  public func heads(at path: DocumentPath) -> [VersionRecord] {
    (headsByPath[path] ?? []).compactMap { records[$0] }.sorted(by: WinnerRule.beats)
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
      guard seen.insert(next).inserted, let record = records[next] else { continue }
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

  /// The file and symlink heads that lost: the conflict versions.
  public var losingDocuments: [VersionRecord] {
    heads.dropFirst().filter { $0.kind == .file || $0.kind == .symlink }
  }
}

extension VersionSet {
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
