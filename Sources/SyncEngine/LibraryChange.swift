import DocumentModel

/// What one change to ``LibraryKnowledge`` did: the paths whose heads may have changed, the
/// paths whose state was recomputed, and the conflicts those paths had before, so that the
/// engine can tell people which conflicts appeared or ended.
struct LibraryChange {
  /// The paths whose heads may have changed.
  var touched: Set<DocumentPath> = []
  /// `touched`, and each folder above them that appeared or went with them.
  var recomputed: Set<DocumentPath> = []
  /// The conflict versions of each touched path that was in conflict before the change.
  var conflictsBefore: [DocumentPath: [VersionRecord]] = [:]
  /// The current version, before the change, of each path in `conflictsBefore`.
  var currentBefore: [DocumentPath: VersionRecord] = [:]
}
