import DocumentModel

/// The engine's link with the hub and what it reports: whether the loop runs, is paused,
/// offline or failing here; the transfers since each direction was last idle; and the
/// requests (`docsync sync`, `prune`, `forget`) waiting for the loop, with their outcomes.
/// Pure: no I/O, no lock of its own.
///
/// Facts that must agree, kept together by the mutating methods:
/// - Requests are numbered in order. A turn of the loop takes the latest request number when
///   it begins (``beginTurn()``) and completes only requests up to it: a request made during a
///   turn waits for the next one, which sees everything made before the request.
/// - Offline means the hub did not answer; failing means this device could not do its part
///   though the hub answered. A local failure therefore ends being offline
///   (``failedHere(_:at:request:)``), and a turn that succeeds ends both.
/// - A forget request is queued, running or answered, one at a time; the one running is never
///   dropped by its caller.
struct ConnectionState {
  /// Whether the loop runs (from `start` to `stop`).
  var running = false
  var paused = false
  /// Since when (wall milliseconds) the hub does not answer, and why.
  private(set) var offline: (since: UInt64, reason: String)?
  /// Since when (wall milliseconds) syncing fails here, not at the hub, and why; `request` is
  /// the latest sync request that the latest failed turn had seen when it began.
  private(set) var failing: (since: UInt64, reason: String, request: UInt64)?
  /// Since when (wall milliseconds) `failing` or another local failure has held something:
  /// what `docsync events` heard as `failing`, and will hear as `recovered`.
  private(set) var failingSince: UInt64?
  /// Wall-clock milliseconds of the last turn that completed.
  private(set) var lastSync: UInt64?
  /// Versions pushed since the outbox was last empty, and the bytes they carry.
  private(set) var uploaded = (files: 0, bytes: UInt64(0))
  /// Content to fetch and fetched since pulling last found nothing new.
  private(set) var download = SyncStatus.Transfer()

  private(set) var syncRequested: UInt64 = 0
  /// When the latest `synchronize` asked (monotonic milliseconds).
  private(set) var syncRequestedAt: UInt64 = 0
  /// How many `synchronize` calls wait now. A request whose caller gave up no longer hurries
  /// the loop: it once retried an unreachable hub every 20 ms until the hub came back.
  private(set) var syncWaiters = 0
  private(set) var syncCompleted: UInt64 = 0

  /// `docsync prune` requests, the outcome of the latest one the loop ran, and when pruning
  /// last ran (wall-clock milliseconds; the loop prunes by itself a day after that).
  private(set) var pruneRequested: UInt64 = 0
  private(set) var pruneOutcome: (request: UInt64, result: Result<PruneReport, SyncError>)?
  var lastPrune: UInt64 = 0
  /// When this device last asked the hub for erasures (monotonic milliseconds).
  var lastErasureLook: UInt64 = 0
  /// `docsync forget` requests waiting for the loop, and the outcomes it has not handed back.
  private(set) var forgetQueue: [(request: UInt64, path: DocumentPath)] = []
  private(set) var forgetOutcomes: [UInt64: Result<ForgetOutcome, SyncError>] = [:]
  private(set) var forgetRequested: UInt64 = 0
  /// The request the loop is running now: its caller waits for it whatever happens.
  private(set) var forgetRunning: UInt64?

  // MARK: - Sync requests

  /// A `synchronize` asks at `now` (monotonic milliseconds) and waits: returns its number.
  mutating func requestSync(at now: UInt64) -> UInt64 {
    syncRequested += 1
    syncRequestedAt = now
    syncWaiters += 1
    return syncRequested
  }

  /// A `synchronize` stopped waiting (done, failed or out of time).
  mutating func syncWaiterLeft() {
    syncWaiters = max(syncWaiters, 1) - 1
  }

  /// A turn begins: the latest request it serves, and whether a caller waits for one it has
  /// not completed (the turn then records and settles now).
  func beginTurn() -> (target: UInt64, forced: Bool) {
    (syncRequested, syncRequested > syncCompleted && syncWaiters > 0)
  }

  /// A turn that began at request `target` brought everything up to date.
  mutating func completeSync(through target: UInt64) {
    syncCompleted = max(syncCompleted, target)
  }

  /// Whether request `request` has been completed.
  func isCompleted(_ request: UInt64) -> Bool { syncCompleted >= request }

  // MARK: - Online, offline, failing

  /// The hub did not answer at `now`: returns true when this begins being offline.
  mutating func wentOffline(_ reason: String, at now: UInt64) -> Bool {
    guard offline == nil else {
      offline?.reason = reason
      return false
    }
    offline = (now, reason)
    return true
  }

  /// The hub answered: returns since when it had not, if it had not.
  mutating func cameOnline() -> UInt64? {
    defer { offline = nil }
    return offline?.since
  }

  /// A turn that began at request `request` failed here (not at the hub, which answered) at
  /// `now`: returns true when this begins failing.
  mutating func failedHere(_ reason: String, at now: UInt64, request: UInt64) -> Bool {
    offline = nil
    guard failing == nil else {
      failing?.reason = reason
      failing?.request = request
      return false
    }
    failing = (now, reason, request)
    return true
  }

  /// A turn succeeded at `now` (wall milliseconds): nothing fails, the hub answers.
  mutating func succeeded(at now: UInt64) {
    offline = nil
    failing = nil
    lastSync = now
  }

  /// What fails on this device now (this state's `failing`, or another cause the caller
  /// knows of), at `now`: `.began` when something starts failing, `.ended(since:)` when
  /// nothing does any more, nil when neither changed.
  mutating func failureChanged(failing reason: String?, at now: UInt64) -> FailureChange? {
    if reason != nil, failingSince == nil {
      failingSince = now
      return .began
    }
    if reason == nil, let since = failingSince {
      failingSince = nil
      return .ended(since: since)
    }
    return nil
  }

  /// How ``failureChanged(failing:at:)`` moved.
  enum FailureChange: Equatable {
    case began
    case ended(since: UInt64)
  }

  /// Why a turn that began after sync request `request` was made failed here; nil when none
  /// did. By the request the turn had seen, not by when it failed: a turn that began before
  /// the sync was asked for may fail after it, for a cause already mended (the disk has room
  /// again), and the next turn would succeed.
  func failureSeen(by request: UInt64) -> String? {
    guard let failing, failing.request >= request else { return nil }
    return failing.reason
  }

  // MARK: - Transfers

  /// `files` versions carrying `bytes` reached the hub.
  mutating func noteUploaded(files: Int, bytes: UInt64) {
    uploaded.files += files
    uploaded.bytes = saturatingSum(uploaded.bytes, bytes)
  }

  /// The outbox is empty (or all held back): returns what went up since it last was, if
  /// anything did, and starts counting again.
  mutating func uploadIdle() -> (files: Int, bytes: UInt64)? {
    defer { uploaded = (0, 0) }
    return uploaded.files > 0 ? uploaded : nil
  }

  /// Content of `files` files carrying `bytes` is to be fetched. Sizes come from other
  /// devices: bounded by `RecordCheck`, and added without a trap.
  mutating func noteDownloadNeeded(files: Int, bytes: UInt64) {
    download.totalFiles += files
    download.totalBytes = saturatingSum(download.totalBytes, bytes)
  }

  /// Content of `files` files carrying `bytes` was fetched (or given up on for this turn).
  mutating func noteDownloaded(files: Int, bytes: UInt64) {
    download.doneFiles += files
    download.doneBytes = saturatingSum(download.doneBytes, bytes)
  }

  /// Pulling found nothing new: returns what came down since it last did, if anything did,
  /// and starts counting again.
  mutating func downloadIdle() -> SyncStatus.Transfer? {
    defer { download = SyncStatus.Transfer() }
    return download.doneFiles > 0 ? download : nil
  }

  // MARK: - Prune and forget requests

  /// `docsync prune` asks: returns its number.
  mutating func requestPrune() -> UInt64 {
    pruneRequested += 1
    return pruneRequested
  }

  /// The outcome of prune request `request`, once a prune that began after it ended.
  func pruneOutcome(of request: UInt64) -> Result<PruneReport, SyncError>? {
    guard let pruneOutcome, pruneOutcome.request >= request else { return nil }
    return pruneOutcome.result
  }

  /// Whether the loop prunes now (asked, or `interval` since the last prune at wall time
  /// `now`), and the latest request it then answers.
  func pruneDue(at now: UInt64, interval: UInt64) -> (request: UInt64, due: Bool) {
    let asked = pruneRequested > (pruneOutcome?.request ?? 0)
    let old = now >= saturatingSum(lastPrune, interval)
    return (pruneRequested, asked || old)
  }

  /// A prune that answers requests up to `request` ended at wall time `now`.
  mutating func pruned(request: UInt64, result: Result<PruneReport, SyncError>, at now: UInt64) {
    pruneOutcome = (request, result)
    lastPrune = now
  }

  /// `docsync forget` asks for `path`: returns its number.
  mutating func requestForget(_ path: DocumentPath) -> UInt64 {
    forgetRequested += 1
    forgetQueue.append((forgetRequested, path))
    return forgetRequested
  }

  /// The loop takes the oldest forget request to run, if any.
  mutating func startForget() -> (request: UInt64, path: DocumentPath)? {
    forgetRunning = forgetQueue.first?.request
    return forgetQueue.first
  }

  /// The loop stops running `request`, with `result` (nil: it failed at the hub and stays
  /// queued for the next turn).
  mutating func endForget(_ request: UInt64, result: Result<ForgetOutcome, SyncError>?) {
    if forgetRunning == request { forgetRunning = nil }
    guard let result else { return }
    forgetQueue.removeAll { $0.request == request }
    forgetOutcomes[request] = result
  }

  /// The outcome of forget request `request`, handed back once.
  mutating func takeForgetOutcome(_ request: UInt64) -> Result<ForgetOutcome, SyncError>? {
    forgetOutcomes.removeValue(forKey: request)
  }

  /// The caller of `request` gives up: returns whether it was dropped before it ran (false
  /// when it runs now, and its outcome comes soon, or it is done).
  mutating func dropForget(_ request: UInt64) -> Bool {
    if forgetRunning == request { return false }
    let queued = forgetQueue.contains { $0.request == request }
    forgetQueue.removeAll { $0.request == request }
    return queued
  }
}
