extension VersionSet {
  /// `id` and every known version it descends from.
  public func ancestry(of id: VersionID) -> Set<VersionID> { Set(ancestryRecords(of: id).keys) }

  /// `id` and every known version it descends from, with their records (each read once, from
  /// memory or the archive).
  func ancestryRecords(of id: VersionID) -> [VersionID: VersionRecord] {
    var seen: [VersionID: VersionRecord] = [:]
    var stack = [id]
    while let next = stack.popLast() {
      guard seen[next] == nil, let record = self[next] else { continue }
      seen[next] = record
      stack += record.parents
    }
    return seen
  }

  /// The nearest common ancestor of `ids` (the heads of a conflict, say): of the versions that
  /// each of them is or descends from, one that no other such version descends from. Where
  /// criss-cross merges leave several, the latest (by time, then id) is taken, so every device
  /// that knows the same versions picks the same one. Nil when history no longer has one.
  public func nearestCommonAncestor(of ids: [VersionID]) -> VersionRecord? {
    guard let first = ids.first else { return nil }
    var known = ancestryRecords(of: first)
    var common = Set(known.keys)
    for id in ids.dropFirst() {
      let more = ancestryRecords(of: id)
      common.formIntersection(more.keys)
      known.merge(more) { first, _ in first }
    }
    // Common ancestors are closed under "parent of": a version that is an ancestor of another
    // common one is a parent of some common one, so the nearest are those that are nobody's.
    var nearest = common
    for id in common { nearest.subtract(known[id]!.parents) }
    return nearest.compactMap { known[$0] }.max { ($0.modified, $0.id) < ($1.modified, $1.id) }
  }

  /// The ancestors that merging the documents in conflict in `state` reads: for each such
  /// document, the nearest common ancestor of all its heads and of every pair of them (what
  /// `base<ext>`, `merged<ext>` and automatic merges are made over). Retention keeps their
  /// content while the conflict lasts.
  public func mergeBases(in state: LibraryState) -> Set<VersionID> {
    var bases: Set<VersionID> = []
    for path in state.conflicts.keys {
      let heads = heads(at: path).map(\.id)
      guard heads.count > 1 else { continue }
      if let base = nearestCommonAncestor(of: heads) { bases.insert(base.id) }
      for (index, first) in heads.enumerated() {
        for second in heads[(index + 1)...] {
          if let base = nearestCommonAncestor(of: [first, second]) { bases.insert(base.id) }
        }
      }
    }
    return bases
  }
}
