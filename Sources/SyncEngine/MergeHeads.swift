import DocumentModel

/// What the merged and base views of a document in conflict are made from: its current
/// version, its other heads, and their nearest common ancestor when history still has one.
public struct MergeHeads: Sendable, Equatable {
  public var current: VersionRecord
  public var others: [VersionRecord]
  /// The nearest common ancestor of all the heads.
  public var base: VersionRecord?
  /// For each other head, its nearest common ancestor with the current version: a head that
  /// already saw some of the current version's past is merged over that, not over the older
  /// common base, so changes it has seen are not shown again as overlaps.
  public var pairBases: [VersionID: VersionRecord]

  /// Identifies the views' content: it changes when a head or an ancestor does.
  public var key: [VersionID] {
    [current.id] + others.map(\.id).sorted() + (base.map { [$0.id] } ?? [])
      + pairBases.values.map(\.id).sorted()
  }
}
