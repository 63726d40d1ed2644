import DocumentModel

extension SyncEngine {
  /// Brings the library state up to date with `known` at `touched`, logs conflicts that
  /// appear, and applies a new `.docsyncignore`. Called with the lock held.
  func updateState(touched: Set<DocumentPath>) {
    let conflictsBefore = Dictionary(
      uniqueKeysWithValues: touched.map { ($0, state.conflicts[$0]?.count ?? 0) })
    state.update(from: known, touched: touched)
    history.update(from: known, touched: touched)
    for path in touched.sorted() {
      let count = state.conflicts[path]?.count ?? 0
      if count > conflictsBefore[path] ?? 0 {
        logger.info("conflict at \(path): \(count) version(s) in .versions/\(path)/")
      }
    }
    if touched.contains(IgnoreRules.filePath), let rules = rulesOfCurrentIgnoreFile() {
      adopt(rules)
    }
  }

  /// The rules of the current version of `.docsyncignore`: built-in only when there is none,
  /// nil while its content is not here yet. Called with the lock held.
  func rulesOfCurrentIgnoreFile() -> IgnoreRules? {
    guard case .document(let record)? = state.entries[IgnoreRules.filePath] else {
      return .builtIn
    }
    guard case .file(let hash, _, _) = record.content else { return .builtIn }
    return blobs.bytes(hash).map { IgnoreRules(fileContent: $0) }
  }

  /// Switches to `rules`. A path that becomes ignored keeps what it shows on every device and
  /// simply stops syncing; a path that stops being ignored syncs from now on, both ways.
  /// Called with the lock held.
  func adopt(_ rules: IgnoreRules) {
    guard rules != ignore else { return }
    let previous = ignore
    ignore = rules
    logger.info("ignore rules: \(rules.patternCount) pattern(s) from \(IgnoreRules.fileName)")
    guard let tree else { return }
    let released = { (path: DocumentPath) in previous.isIgnored(path) && !rules.isIgnored(path) }
    // Local files the old rules hid become local work to record, as if just created.
    for (path, entry) in tree.entries(under: .root)
    where !path.isRoot && entry != .special && released(path) {
      changeLog.note(.create(path))
    }
    // Remote versions the old rules kept out of the tree are shown now.
    deferred.formUnion(state.entries.keys.filter(released))
  }
}
