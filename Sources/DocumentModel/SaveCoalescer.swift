/// One local file-system operation, as the mount observed it during a quiet window.
public enum LocalOperation: Hashable, Sendable {
  /// A file, folder or symlink appeared (open with O_CREAT, mkdir, symlink).
  case create(DocumentPath)
  /// Bytes or attributes changed (write, truncate, chmod), or a writer closed the file.
  case write(DocumentPath)
  /// rename(2); a folder's rename moves everything below it.
  case rename(from: DocumentPath, to: DocumentPath)
  /// unlink or rmdir.
  case remove(DocumentPath)

  var paths: [DocumentPath] {
    switch self {
    case .create(let path), .write(let path), .remove(let path): [path]
    case .rename(let from, let to): [from, to]
    }
  }
}

/// Folds the steps of editor saves into one version per path (invariant 4).
///
/// Identity is the path: whatever sits at a path when the window closes continues that path's
/// history, so a temp file renamed over `f`, `rename(f, f~)` followed by a new `f`, and truncate
/// and rewrite all become one version of `f` whose parent is the version `f` had before.
/// Ignored names never produce versions, a path that did not exist before and does not exist
/// after (a `sedXXXXXX` temp) produces nothing, and a path whose content ends as it started
/// produces nothing. A path that ends empty after existing gets a deletion. A path that ends
/// holding what was renamed from a path that no longer exists names that origin.
public enum SaveCoalescer {
  /// The versions to publish for one quiet window.
  ///
  /// - Parameters:
  ///   - operations: the operations of the window, in order.
  ///   - before: the version each path showed when the window opened (a deletion record is
  ///     fine); it needs to cover the touched paths and, for renamed folders, their subtrees.
  ///   - after: what each path holds when the window closes (absent: nothing), with the same
  ///     coverage.
  ///   - rules: what never syncs in this library.
  public static func changes(
    operations: [LocalOperation], before: [DocumentPath: VersionRecord],
    after: [DocumentPath: VersionContent], rules: IgnoreRules = .builtIn
  ) -> [PendingChange] {
    let (touched, source) = trace(operations: operations, before: before, present: after.keys)
    var result: [PendingChange] = []
    for path in touched.sorted() where !path.isRoot && !rules.isIgnored(path) {
      let previous = before[path]
      guard let now = after[path] else {
        if let previous, !previous.content.isDeletion {
          result.append(PendingChange(path: path, content: .deletion, parents: [previous.id]))
        }
        continue
      }
      if let previous, previous.content == now { continue }
      var origin: RenameOrigin?
      if let from = source[path] ?? nil, from != path, after[from] == nil,
        !rules.isIgnored(from), let moved = before[from], !moved.content.isDeletion
      {
        origin = RenameOrigin(path: from, version: moved.id)
      }
      result.append(
        PendingChange(
          path: path, content: now, parents: previous.map { [$0.id] } ?? [], origin: origin))
    }
    return result
  }

  /// For each path that the window's operations put something at, the path whose document it
  /// held when the window opened (nil: something new, or what was there was removed or moved
  /// away). Paths no operation touched are absent. `before` and `present` (the paths that
  /// hold something when the window closes) are those ``changes(operations:before:after:rules:)``
  /// takes: a window asks this before it hashes, to carry a renamed file's content over.
  public static func origins(
    operations: [LocalOperation], before: [DocumentPath: VersionRecord],
    present: some Sequence<DocumentPath>
  ) -> [DocumentPath: DocumentPath?] {
    trace(operations: operations, before: before, present: present).source
  }

  private static func trace(
    operations: [LocalOperation], before: [DocumentPath: VersionRecord],
    present: some Sequence<DocumentPath>
  ) -> (touched: Set<DocumentPath>, source: [DocumentPath: DocumentPath?]) {
    var touched: Set<DocumentPath> = []
    // For each path, the pre-window path whose document it now holds (nil: a new one).
    var source: [DocumentPath: DocumentPath?] = [:]
    // Every path of `before`, `present` and `source`, so that a rename finds what it moves in
    // time linear in that, whatever the window's size.
    var known = PathIndex(before.keys)
    for path in present { known.insert(path) }
    func setSource(_ path: DocumentPath, _ origin: DocumentPath?) {
      source[path] = .some(origin)
      known.insert(path)
    }
    func currentSource(_ path: DocumentPath) -> DocumentPath? {
      if let known = source[path] { return known }
      return before[path].map { $0.content.isDeletion ? nil : $0.path } ?? nil
    }
    for operation in operations {
      touched.formUnion(operation.paths)
      switch operation {
      case .create(let path):
        setSource(path, nil)
      case .write:
        break
      case .remove(let path):
        setSource(path, nil)
      case .rename(let from, let to):
        guard from != to else { continue }
        var moved = Set(known.paths(atOrBelow: from))
        moved.insert(from)
        let sources = moved.map { ($0, currentSource($0)) }
        let overwritten = known.paths(atOrBelow: to).filter { $0 != to }
        for path in overwritten { setSource(path, nil) }
        for (path, _) in sources { setSource(path, nil) }
        for (path, origin) in sources {
          let target = path.rebased(from: from, to: to)
          setSource(target, origin)
          touched.insert(path)
          touched.insert(target)
        }
        touched.formUnion(overwritten)
      }
    }
    return (touched, source)
  }
}
