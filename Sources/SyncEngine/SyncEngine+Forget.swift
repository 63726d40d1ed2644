import DocumentModel
import Glibc
import Hub
import LocalStore

extension SyncEngine {
  // MARK: - Forgetting a document, and learning what the hub let go of

  /// How often the loop asks the hub for erasures when nobody asked for a sync (milliseconds):
  /// a forget or a prune elsewhere adds no record, so nothing else would wake this device.
  static let erasureLookMilliseconds: UInt64 = 5000

  /// Asks the loop to forget the document at `path` everywhere (`docsync forget`), or every
  /// document under the folder at `path`, and waits for the outcome.
  public func forget(_ path: DocumentPath, timeout: Duration) async throws(SyncError)
    -> ForgetOutcome
  {
    let request = try withLock { () throws(SyncError) -> UInt64 in
      // A paused mount talks to no hub, and forgetting starts on the hub.
      if connection.paused { throw .paused }
      return connection.requestForget(path)
    }
    changeLog.wake.signal()
    let patience = MonotonicTimer.deadline(after: Self.forgetOfflinePatience)
    let deadline = MonotonicTimer.deadline(after: timeout)
    while true {
      let (outcome, unreachable) = withLock {
        (connection.takeForgetOutcome(request), connection.offline?.reason)
      }
      if let outcome { return try outcome.get() }
      let now = MonotonicTimer.now()
      // Offline for a while after asking (the loop has had its retries): the person learns now
      // that nothing was forgotten, rather than when the command's hour runs out.
      let gaveUp = unreachable != nil && now >= patience
      if gaveUp || now >= deadline {
        let dropped = withLock { connection.dropForget(request) }
        // Not dropped: the loop is running it, and its outcome comes soon.
        if dropped {
          if let unreachable {
            throw .timeout("cannot forget: the hub is unreachable: \(unreachable)")
          }
          throw .timeout("the forget did not start within \(timeout)")
        }
      }
      await MonotonicTimer.shared.sleep(for: .milliseconds(20))
    }
  }

  /// How long a forget waits for an unreachable hub before it gives up.
  static let forgetOfflinePatience: Duration = .seconds(15)

  /// Runs the forget requests. Called by the loop after it has pulled everything, so that the
  /// versions it removes are every version the hub has of the path; a version another device
  /// adds meanwhile stays, as a new document.
  func forgetIfAsked() async throws(SyncError) {
    while let (request, path) = withLock({ connection.startForget() }) {
      defer { withLock { connection.endForget(request, result: nil) } }
      let result: Result<ForgetOutcome, SyncError>
      do throws(SyncError) {
        result = .success(try await forgetNow(path))
      } catch .hub(let reason) {
        // Offline: the request stays queued for the next round.
        throw .hub(reason)
      } catch {
        result = .failure(error)
      }
      withLock { connection.endForget(request, result: result) }
    }
  }

  /// Removes every version of the document at `path`, or of every document under the folder
  /// at `path` (current or deleted), from the hub, then here. The folders themselves stay: they
  /// are emptied, not deleted, so that a folder another device is filling offline keeps its
  /// place; `rmdir` deletes one everywhere as usual.
  private func forgetNow(_ path: DocumentPath) async throws(SyncError) -> ForgetOutcome {
    let (ids, documents) = try withLock { () throws(SyncError) -> ([VersionID], Int) in
      if path.isRoot {
        throw .local("refusing to forget the whole library: name a document or a folder in it")
      }
      let documents = documentPaths(at: path)
      guard !documents.isEmpty else {
        if case .directory? = library.state.entries[path] {
          throw .local("\(path) is a folder with no synced document in it")
        }
        throw .local("\(path) is not a synced document and has no history")
      }
      return (documents.flatMap { library.known.ids(at: $0) }, documents.count)
    }
    // A large folder goes in batches, each one statement's worth on the hub; a batch that
    // fails leaves the ones before it forgotten, and the command can be run again.
    for batch in stride(from: 0, to: ids.count, by: 4096) {
      do {
        try await hub.forget(records: ids[batch..<min(batch + 4096, ids.count)].map(\.bytes))
      } catch {
        throw SyncError(error)
      }
    }
    // Versions of this device that never reached the hub go too: the hub skipped them.
    forgetHere(Set(ids))
    logger.info(
      "forgot \(path): \(documents) document(s), \(ids.count) version(s), here and on the hub")
    return ForgetOutcome(documents: documents, versions: ids.count)
  }

  /// The documents `docsync forget PATH` names: PATH itself when it is (or was) a document,
  /// else every path under it that is or was one. Called with the lock held.
  private func documentPaths(at path: DocumentPath) -> [DocumentPath] {
    func isDocument(_ candidate: DocumentPath) -> Bool {
      library.known.ids(at: candidate).contains { library.known[$0]?.kind != .directory }
    }
    if isDocument(path) { return [path] }
    return library.known.paths.filter {
      $0 != path && $0.isEqualOrDescendant(of: path) && isDocument($0)
    }
    .sorted()
  }

  /// Pages through the hub's erasures: content that retention released elsewhere stops being
  /// listed in `.history` here, and records forgotten elsewhere go here too. At each requested
  /// sync, and every few seconds otherwise.
  func learnErasures(now asked: Bool) async throws(SyncError) {
    let due = withLock {
      asked || monotonicMilliseconds() >= connection.lastErasureLook + Self.erasureLookMilliseconds
    }
    guard due else { return }
    // Many pages, then one pass: what is still needed is a walk of every record, done once
    // per 64 pages (32,768 erasures, bounded memory) however many a large prune elsewhere made.
    var more = true
    while more {
      var cursor = withLock { library.erasureCursor }
      var forgotten: Set<VersionID> = []
      var released: Set<VersionID> = []
      more = false
      for _ in 0..<64 {
        let page: ErasurePage
        do {
          page = try await hub.erasures(after: cursor, limit: 512)
        } catch {
          throw SyncError(error)
        }
        if page.erasures.isEmpty { break }
        for erasure in page.erasures {
          guard let digest = Digest256(bytes: erasure.id) else { continue }
          switch erasure.kind {
          case .forgotten: forgotten.insert(VersionID(digest))
          case .released: released.insert(VersionID(digest))
          }
        }
        cursor = page.cursor
        more = true
      }
      if !forgotten.isEmpty { forgetHere(forgotten) }
      if !released.isEmpty { _ = try release(released.subtracting(forgotten)) }
      try withLock { () throws(SyncError) in
        connection.lastErasureLook = monotonicMilliseconds()
        guard cursor != library.erasureCursor else { return }
        // After what it names is applied: a crash before this only applies it again.
        try persist([.setMetadata(key: "erasure_cursor", value: Array(cursor.serialized.utf8))])
        library.erasureCursor = cursor
      }
    }
  }

  /// Takes versions whose content retention let go out of `.history`, and deletes the blobs no
  /// other version needs; returns how many blobs and bytes went.
  func release(_ ids: Set<VersionID>) throws(SyncError) -> (blobs: Int, bytes: UInt64) {
    guard !ids.isEmpty else { return (0, 0) }
    let unneeded = try withLock { () throws(SyncError) -> Set<ContentHash> in
      let fresh = Set(ids.filter { !library.history.isReleased($0, in: library.known) })
      guard !fresh.isEmpty else { return [] }
      do throws(LocalStoreError) {
        try store.addReleased(fresh.map(\.bytes))
      } catch {
        throw .local(error.description)
      }
      library.release(fresh)
      return Set(fresh.compactMap { library.known[$0]?.content.blobHash }).filter(isUnneeded)
    }
    return removeBlobs(unneeded)
  }

  /// Drops versions here for good: their records, their place in the outbox, and what they
  /// showed, in `.versions` and `.history` and as working files, and the blobs no remaining
  /// version needs. A version of this device that follows a dropped one stays, a head of its
  /// own (a new document, or a conflict at worst); a working file changed since it was shown
  /// stays too, and is recorded as a new document.
  func forgetHere(_ ids: Set<VersionID>) {
    let unneeded = withLock { () -> Set<ContentHash> in
      let gone = ids.compactMap { library.known[$0] }
      guard !gone.isEmpty else { return [] }
      let goneIDs = Set(gone.map(\.id))
      var shownGone: [DocumentPath: VersionRecord] = [:]
      for path in Set(gone.map(\.path)) {
        if let record = library.shown[path],
          let version = library.known[VersionID(digest(record.versionID))],
          goneIDs.contains(version.id)
        {
          shownGone[path] = version
        }
      }
      do {
        try persist(goneIDs.map { .removeVersion(id: $0.bytes) })
      } catch {
        logger.error("cannot forget versions here: \(error)")
        return []
      }
      let touched = updateState(library.forget(gone))
      for (path, version) in shownGone {
        merges.forgetMergedView(at: path)
        guard library.state.entries[path] == nil else { continue }
        dropWorkingFile(path, showing: version)
      }
      reconcile(touched)
      tree?.conflictsChanged(at: touched)
      return Set(gone.compactMap(\.content.blobHash)).filter(isUnneeded)
    }
    _ = removeBlobs(unneeded)
  }

  /// The working file at `path` showed a version that is gone and nothing replaces it: it goes
  /// when it still holds what was shown; else it is this device's own work and is recorded as
  /// a new document. Called with the lock held.
  private func dropWorkingFile(_ path: DocumentPath, showing version: VersionRecord) {
    guard let tree else { return }
    let local = tree.entry(at: path)
    let unchanged =
      matches(local, library.shown[path], version) && !changeLog.peekPaths().contains(path)
      && !tree.hasOpenWriter(at: path)
    if unchanged, local != nil, case .applied = tree.apply(.remove(path: path), expected: local) {
      // Removed.
    } else if local != nil {
      changeLog.note(.create(path))
    }
    library.shown[path] = nil
    try? persist([.unshow(path: path.bytes)])
    applies.drop(path)
  }

  /// Whether no version still shown or listed needs the content `hash`: every version that has
  /// it was released (or is gone). Called with the lock held.
  func isUnneeded(_ hash: ContentHash) -> Bool {
    library.known.versions(withContent: hash).allSatisfy {
      library.history.isReleased($0, in: library.known)
    }
  }

  /// Deletes these blobs here; returns how many there were and their bytes.
  func removeBlobs(_ hashes: Set<ContentHash>) -> (blobs: Int, bytes: UInt64) {
    var removed = (blobs: 0, bytes: UInt64(0))
    for hash in hashes.sorted() {
      guard let size = blobs.blobIdentity(hash)?.size else { continue }
      blobs.remove(hash)
      withLock { contentState.settled(hash) }
      removed.blobs += 1
      removed.bytes = saturatingSum(removed.bytes, UInt64(size))
    }
    return removed
  }
}
