import DocumentModel
import Glibc
import Hub
import LocalStore

extension SyncEngine {
  // MARK: - Retention and pruning

  static let pruneIntervalMilliseconds: UInt64 = 86_400_000

  /// The library's retention, as the hub keeps it (the default when it keeps none).
  public func retentionPolicy() async throws(SyncError) -> RetentionPolicy {
    let stored: String?
    do {
      stored = try await hub.retention()
    } catch {
      throw SyncError(error)
    }
    return stored.flatMap(RetentionPolicy.init(serialized:)) ?? .default
  }

  /// Sets the library's retention on the hub, for every device.
  public func setRetention(_ policy: RetentionPolicy) async throws(SyncError) {
    do {
      try await hub.setRetention(policy.serialized)
    } catch {
      throw SyncError(error)
    }
  }

  /// Asks the loop to prune once it has pulled everything, and waits for the outcome.
  public func prune(timeout: Duration) async throws(SyncError) -> PruneReport {
    let request = try withLock { () throws(SyncError) -> UInt64 in
      // A paused mount talks to no hub, and pruning starts on the hub.
      if connection.paused { throw .paused }
      return connection.requestPrune()
    }
    changeLog.wake.signal()
    let deadline = MonotonicTimer.deadline(after: timeout)
    while MonotonicTimer.now() < deadline {
      if let outcome = withLock({ connection.pruneOutcome(of: request) }) {
        return try outcome.get()
      }
      await MonotonicTimer.shared.sleep(for: .milliseconds(20))
    }
    if let offline = withLock({ connection.offline }) {
      throw .timeout("cannot prune: the hub is unreachable: \(offline.reason)")
    }
    throw .timeout("the prune did not finish within \(timeout)")
  }

  /// Prunes when asked, or when the last prune is a day old. Called by the loop after it has
  /// pulled everything, so that what it lets go is judged on every version the hub has given.
  func pruneIfDue() async {
    let (request, due) = withLock { () -> (UInt64, Bool) in
      connection.pruneDue(at: wallMilliseconds(), interval: Self.pruneIntervalMilliseconds)
    }
    guard due else { return }
    let result: Result<PruneReport, SyncError>
    do throws(SyncError) {
      result = .success(try await pruneNow())
    } catch {
      logger.error("pruning failed: \(error)")
      result = .failure(error)
    }
    let now = wallMilliseconds()
    withLock {
      connection.pruned(request: request, result: result, at: now)
    }
    try? persist([.setMetadata(key: "last_prune", value: Array(String(now).utf8))])
  }

  /// Lets go of the content of the earlier versions that retention releases: on the hub first
  /// (so that no device fetches it again), then here. Their records stay, on the hub and here:
  /// they are small, and they carry the ancestry that tells heads apart (a device that holds a
  /// version's parent but never saw the version would take the parent for a head, and one
  /// that rebuilt its heads from fewer records after a restart too). Never a head (the index
  /// holds none), never a version waiting in the outbox nor one that only such versions follow,
  /// so never content an unsynced version needs, and never content a kept version shares.
  func pruneNow() async throws(SyncError) -> PruneReport {
    let policy = try await retentionPolicy()
    let now = wallMilliseconds()
    // One path at a time under the lock, which FUSE requests wait on: the earlier versions and
    // their followers are read from the local database, not held in memory.
    let (paths, bases) = withLock {
      // What merging a document in conflict reads stays while the conflict lasts.
      (library.history.paths, library.known.mergeBases(in: library.state))
    }
    var released: [VersionRecord] = []
    for path in paths {
      released += withLock { () -> [VersionRecord] in
        // Only a version that a version on the hub follows: one followed only by versions
        // still in the outbox is a head for every other device until they go up.
        let waiting = Set(library.outbox)
        let earlier = library.history.earlierVersions(at: path, in: library.known).filter {
          record in
          library.known.followers(of: record.id).contains { !waiting.contains($0) }
        }
        return policy.released(earlier, now: now).filter { !bases.contains($0.id) }
      }
    }
    var report = PruneReport(policy: policy.description, versions: released.count)
    guard !released.isEmpty else {
      try reclaimLocalSpace()
      return report
    }
    do {
      try await hub.prune(records: released.map(\.id.bytes))
    } catch {
      throw SyncError(error)
    }
    let removed = try release(Set(released.map(\.id)))
    report.blobs = removed.blobs
    report.bytes = removed.bytes
    trimContentCacheIfDue(force: true)
    try reclaimLocalSpace()
    logger.info(
      "released \(released.count) earlier version(s) and \(report.blobs) content file(s) (\(policy))"
    )
    return report
  }

  private func reclaimLocalSpace() throws(SyncError) {
    do {
      try store.reclaimSpace()
    } catch {
      throw .local(error.description)
    }
  }
}
