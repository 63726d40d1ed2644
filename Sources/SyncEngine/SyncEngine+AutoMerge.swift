import DocumentModel
import LocalStore

extension SyncEngine {
  /// The paths whose heads merge by themselves (heads of equal content, and documents in
  /// conflict that `.docsyncattributes` lets merge), and the merges of those whose heads have
  /// not been judged yet. Heads are compared before any ancestor is looked for, so a conflict
  /// that stays (an overlap) costs little on each turn of the loop. Called with the lock held.
  func autoMergePlans() -> (candidates: Set<DocumentPath>, plans: [AutoMerge]) {
    var candidates: Set<DocumentPath> = []
    var plans: [AutoMerge] = []
    // Equal heads first: a path merges one way at a time, and its text merge, if any, is
    // planned again from the heads that are left.
    for path in library.state.equalHeads.sorted() where !recorder.ignore.isIgnored(path) {
      guard let plan = AutoMerge.sameContent(at: path, in: library.known) else { continue }
      candidates.insert(path)
      plans.append(plan)
    }
    guard merges.merging.attributes.lineCount > 0 else { return (candidates, plans) }
    for path in library.state.conflicts.keys.sorted()
    where !recorder.ignore.isIgnored(path) && !candidates.contains(path) {
      let policy = merges.merging.attributes.policy(for: path)
      guard policy != .manual else { continue }
      candidates.insert(path)
      guard !merges.merging.isJudged(path, heads: library.known.heads(at: path).map(\.id).sorted()),
        let plan = AutoMerge.plan(at: path, in: library.known, state: library.state, policy: policy)
      else { continue }
      plans.append(plan)
    }
    return (candidates, plans)
  }

  /// Merges the documents in conflict whose heads have settled: the decision is
  /// `AutoMerge`'s; here the content is read (fetched if an ancestor's is not on this device)
  /// and the merged blob written outside the lock, and the record stored under it.
  func autoMerge() async throws(SyncError) {
    let due = withLock { () -> [AutoMerge] in
      adoptMergeAttributes()
      let (candidates, plans) = autoMergePlans()
      return merges.due(
        plans, candidates: candidates, now: monotonicMilliseconds(),
        settle: mergeSettleMilliseconds)
    }
    // Equal heads need no content: their records are made together, in one transaction (a
    // tree both devices unpacked makes thousands at once).
    let equal = due.filter { $0.sameContent != nil }
    if !equal.isEmpty {
      withLock { adoptMerges(equal.map { ($0.record(content: $0.sameContent!), $0) }) }
    }
    for plan in due where plan.sameContent == nil {
      var contents: [ContentHash: [UInt8]] = [:]
      for hash in plan.neededContent.sorted() {
        if !withLock({ holdsContent(hash, preferring: plan.path) }) {
          _ = try await fetchBlob(hash)
        }
        if let bytes = contentBytes(hash, preferring: plan.path) { contents[hash] = bytes }
      }
      let outcome = plan.merge(contents: contents)
      guard case .merged(let bytes) = outcome else {
        withLock {
          merges.merging.judged(plan)
          reportUnmerged(plan.path)
          switch outcome {
          case .overlapping(let count):
            logger.info(
              "\(plan.path) stays in conflict: \(count) overlapping change(s), see .versions/\(plan.path)/"
            )
          case .notText:
            logger.info("\(plan.path) stays in conflict: a version is not text docsync merges")
          default:
            logger.warning("\(plan.path) stays in conflict: the content of a version is missing")
          }
        }
        continue
      }
      let hash: ContentHash
      do {
        hash = try blobs.add(bytes: bytes)
      } catch {
        // A local failure, not the hub's: the loop must not take it for being offline.
        withLock {
          merges.merging.judged(plan)
          logger.error("cannot store the merge of \(plan.path): \(error)")
        }
        continue
      }
      // The blob's name reaches the disk before the record that names it can.
      store.syncBlobFolders(of: [hash.hex])
      let record = plan.record(
        hash: hash, size: UInt64(bytes.count), chunks: mergeChunkRoot(bytes, hash: hash))
      withLock { adoptMerges([(record, plan)]) }
    }
  }

  /// The chunk root a merge of these bytes names, when the hub stores objects: cut and named
  /// in the current scheme with the library's keys, which every device of this docsync does
  /// alike, so that all make one record, and the merge moves only what it changed. Its list is
  /// kept in place of any other (one in BLAKE2b would name another tree), for the upload.
  func mergeChunkRoot(_ bytes: [UInt8], hash: ContentHash) -> ContentRoot? {
    guard objectStore != nil else { return nil }
    let list = ChunkList(cutting: bytes)
    keepChunkList(list, of: hash)
    return list.root
  }

  /// Stores merge records and shows their content, except those whose heads moved on while
  /// they were made. Called with the lock held.
  private func adoptMerges(_ merges: [(record: VersionRecord, plan: AutoMerge)]) {
    let current = merges.filter {
      library.known.heads(at: $0.plan.path).map(\.id).sorted() == $0.plan.headIDs
    }
    // Another device's identical merge may have arrived meanwhile: then it is simply known.
    let new = current.map(\.record).filter { !library.known.contains($0.id) }
    if !new.isEmpty {
      do {
        try persist(
          new.flatMap { record -> [SyncChange] in
            [.addVersion(record.stored), .enqueue(id: record.id.bytes)]
          })
      } catch {
        logger.error(
          "cannot record the merge of \(new[0].path)\(new.count > 1 ? " and \(new.count - 1) more" : ""): \(error)"
        )
        return
      }
    }
    guard !current.isEmpty else { return }
    let touched = updateState(library.learn(current.map(\.record)))
    library.enqueue(new.map(\.id))
    for (_, plan) in current {
      if plan.sameContent != nil {
        logger.debug("\(plan.path): \(plan.heads.count) equal versions made one")
      } else {
        logger.info(
          "merged \(plan.path) automatically (\(plan.heads.count) versions, \(plan.policy))")
      }
    }
    reconcile(touched)
    tree?.conflictsChanged(at: touched)
  }

  /// Reads the current `.docsyncattributes` when it changed, and uses it; while its content is
  /// not here yet, the previous attributes stay (and it is read again at the next turn).
  /// Called with the lock held.
  func adoptMergeAttributes() {
    var source: VersionID?
    var attributes = MergeAttributes.none
    if case .document(let record)? = library.state.entries[MergeAttributes.filePath],
      case .file(let hash, _, _) = record.content
    {
      source = record.id
      guard source != merges.merging.attributesSource else { return }
      guard let bytes = contentBytes(hash, preferring: MergeAttributes.filePath, locked: true)
      else { return }
      attributes = MergeAttributes(fileContent: bytes)
    }
    guard source != merges.merging.attributesSource else { return }
    merges.merging.adopt(attributes, from: source)
    logger.info(
      "merge attributes: \(attributes.lineCount) line(s) from \(MergeAttributes.fileName)")
  }

  /// Reports the conflict that `updateState` held back, now that merging it failed. Called
  /// with the lock held.
  private func reportUnmerged(_ path: DocumentPath) {
    guard let versions = library.state.conflicts[path], !versions.isEmpty else { return }
    var devices: [String] = []
    for record in [library.state.current(at: path)].compactMap({ $0 }) + versions
    where !devices.contains(record.deviceName) {
      devices.append(record.deviceName)
    }
    events.post(
      .conflict(path: path, added: versions, versions: versions.count, devices: devices),
      time: wallMilliseconds())
  }

  /// Whether an automatic merge waits for its heads to settle. Called with the lock held.
  func autoMergeWaits() -> Bool {
    !autoMergePlans().plans.isEmpty
  }
}
