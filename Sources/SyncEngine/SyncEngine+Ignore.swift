import DocumentModel

extension SyncEngine {
  /// Follows a change of what the library knows (``LibraryKnowledge``): reports conflicts that
  /// appear or end, and applies a new `.docsyncignore`. Returns the paths the change touched.
  /// Called with the lock held.
  @discardableResult
  func updateState(_ change: LibraryChange) -> Set<DocumentPath> {
    let touched = change.touched
    let conflictsBefore = change.conflictsBefore
    let previous = change.currentBefore
    // A folder above them may change too (its last live path was deleted, or one appeared in
    // it): the loop brings it up to date with what waits, as no caller reconciles it.
    if change.recomputed.count > touched.count {
      applies.postpone(contentsOf: change.recomputed.subtracting(touched))
    }
    // Only paths in conflict before or after can have events: sorting every touched path
    // (20,000 for 10,000 renames) cost more than the rest of this.
    let inConflict = touched.filter {
      conflictsBefore[$0] != nil || library.state.conflicts[$0] != nil
    }
    for path in inConflict.sorted() {
      let before = conflictsBefore[path] ?? []
      let after = library.state.conflicts[path] ?? []
      guard before != after else { continue }
      let latest =
        library.state.current(at: path)
        ?? library.known.heads(at: path).max { $0.modified < $1.modified }
      for event in ConflictEvents.between(
        before: before, after: after, previous: previous[path], latest: latest, at: path,
        isAutomaticMerge: { $0.deviceID == AutoMerge.deviceID })
      {
        if case .conflict(_, _, let count, _) = event {
          logger.info("conflict at \(path): \(count) version(s) in .versions/\(path)/")
          // A conflict that `.docsyncattributes` lets merge is reported once the merge was
          // tried and failed (`autoMerge`): nobody is told of what docsync resolves itself.
          if merges.merging.attributes.policy(for: path) != .manual { continue }
        }
        events.post(event, time: wallMilliseconds())
      }
    }
    if touched.contains(IgnoreRules.filePath), let rules = rulesOfCurrentIgnoreFile() {
      adopt(rules)
    }
    if touched.contains(MergeAttributes.filePath) { adoptMergeAttributes() }
    return touched
  }

  /// The rules of the current version of `.docsyncignore`: built-in only when there is none,
  /// nil while its content is not here yet. Called with the lock held.
  func rulesOfCurrentIgnoreFile() -> IgnoreRules? {
    guard case .document(let record)? = library.state.entries[IgnoreRules.filePath] else {
      return .builtIn
    }
    guard case .file(let hash, _, _) = record.content else { return .builtIn }
    return contentBytes(hash, preferring: IgnoreRules.filePath, locked: true).map {
      IgnoreRules(fileContent: $0)
    }
  }

  /// Switches to `rules`. A path that becomes ignored keeps what it shows on every device and
  /// simply stops syncing; a path that stops being ignored syncs from now on, both ways.
  /// Called with the lock held.
  func adopt(_ rules: IgnoreRules) {
    guard let previous = recorder.adopt(rules) else { return }
    logger.info("ignore rules: \(rules.patternCount) pattern(s) from \(IgnoreRules.fileName)")
    guard let tree else { return }
    let released = { (path: DocumentPath) in previous.isIgnored(path) && !rules.isIgnored(path) }
    // Local files the old rules hid become local work to record, as if just created.
    for (path, entry) in tree.entries(under: .root)
    where !path.isRoot && entry != .special && released(path) {
      changeLog.note(.create(path))
    }
    // Remote versions the old rules kept out of the tree are shown now.
    applies.postpone(contentsOf: library.state.entries.keys.filter(released))
  }
}
