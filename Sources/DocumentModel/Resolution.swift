/// A person's answer to a conflict, as `cp`, `mv` and `rm` in `.versions/` express it.
public enum Resolution: Hashable, Sendable {
  /// Make version `v` current (`cp .versions/<path>/<v> <path>`): all conflicts of its path end.
  case choose(VersionID)
  /// Remove conflict version `v` (`rm .versions/<path>/<v>`).
  case discard(VersionID)
  /// Keep what is current for one document (`rm -r .versions/<path>`).
  case keepCurrent(DocumentPath)
  /// Keep what is current for every document at or under a folder (`rm -r .versions/<dir>`).
  case keepCurrentUnder(DocumentPath)
}

extension Resolution {
  /// The versions that record this resolution; empty when there is nothing to resolve or `v`
  /// is unknown.
  ///
  /// A resolution is a version whose parents are the heads it resolves: choosing `v` records
  /// `v`'s content with every head as parent; discarding `v` records the current content with
  /// parents {current, `v`} (and the heads equal to `v`, shown as `v`); keeping current records the current content with every head as
  /// parent. Where the path must stay a folder (see `LibraryState`), the recorded content is a
  /// folder, so the resolution never hides what lives below it.
  public func changes(in set: VersionSet, state: LibraryState) -> [PendingChange] {
    switch self {
    case .choose(let id):
      guard let chosen = set[id], !chosen.content.isDeletion else { return [] }
      let heads = set.heads(at: chosen.path)
      guard heads.count > 1 || heads.first?.id != id else { return [] }
      return [
        PendingChange(
          path: chosen.path, content: chosen.content, parents: heads.map(\.id),
          contentTime: chosen.contentTime)
      ]
    case .discard(let id):
      guard let discarded = set[id], let losing = state.conflicts[discarded.path],
        losing.contains(discarded)
      else { return [] }
      let path = discarded.path
      // Heads with the same content as `v` are `v` to a person: they go with it.
      let heads = set.heads(at: path)
      let equal = heads.filter { $0.content == discarded.content }.map(\.id)
      switch state.entries[path] {
      case .document(let current):
        return [
          PendingChange(
            path: path, content: current.content, parents: [current.id] + equal,
            contentTime: current.contentTime)
        ]
      case .directory:
        let folders = heads.filter { $0.kind == .directory }.map(\.id)
        return [PendingChange(path: path, content: .directory, parents: folders + equal)]
      case nil:
        return []
      }
    case .keepCurrent(let path):
      return Self.keepingCurrent(at: path, in: set, state: state).map { [$0] } ?? []
    case .keepCurrentUnder(let folder):
      return state.conflicts.keys.filter { $0.isEqualOrDescendant(of: folder) }.sorted()
        .compactMap { Self.keepingCurrent(at: $0, in: set, state: state) }
    }
  }

  private static func keepingCurrent(
    at path: DocumentPath, in set: VersionSet, state: LibraryState
  ) -> PendingChange? {
    guard state.conflicts[path] != nil else { return nil }
    let parents = set.heads(at: path).map(\.id)
    switch state.entries[path] {
    case .document(let current):
      return PendingChange(
        path: path, content: current.content, parents: parents, contentTime: current.contentTime)
    case .directory:
      return PendingChange(path: path, content: .directory, parents: parents)
    case nil:
      return nil
    }
  }
}
