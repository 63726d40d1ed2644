import DocumentModel
import Glibc
import Hub
import LocalStore
import Logging

/// Where syncing stands, for `docsync status`.
public struct SyncStatus: Sendable {
  /// The overall state, as a person reads it.
  public enum State: Sendable, Equatable {
    case upToDate
    /// Versions are going to the hub.
    case uploading
    /// Content is coming from the hub.
    case downloading
    /// Local changes wait for a quiet moment or a file to close, or remote changes wait to be
    /// shown.
    case pending
    case offline(since: UInt64, reason: String)
    /// The hub answers, but this device cannot store or read what it syncs (its disk is full,
    /// its state cannot be written) since `since`: tried again, nothing is lost meanwhile.
    case cannotSync(since: UInt64, reason: String)
    case paused
  }

  /// Progress of one direction: versions (files) and bytes done and in all, counted since that
  /// direction was last idle.
  public struct Transfer: Sendable, Equatable {
    public var doneFiles = 0
    public var doneBytes: UInt64 = 0
    public var totalFiles = 0
    public var totalBytes: UInt64 = 0

    public init() {}
  }

  public var deviceName: String
  public var deviceID: String
  public var hub: String
  public var state: State
  public var pendingUploads: Int
  public var pendingLocalChanges: Bool
  public var upload: Transfer
  public var download: Transfer
  /// Wall-clock milliseconds of the last complete exchange with the hub.
  public var lastSync: UInt64?
  public var conflicts: [(path: DocumentPath, versions: Int)]
  /// Paths that keep their last good content while the content of their current version is not
  /// here, and conflict versions (by their name in `.versions`) whose content is not, and why.
  public var waiting: [ContentWaiting] = []
  /// Paths whose saved content could not be read or copied for upload, and why: they are
  /// tried again, and each keeps what it holds meanwhile.
  public var unreadable: [(path: DocumentPath, reason: String)] = []
  /// Paths with a version that cannot be uploaded: its content cannot be read or is damaged
  /// here, and the file has changed since. Tried again at the next start; the versions after
  /// it upload meanwhile.
  public var heldBack: [DocumentPath] = []
  /// Bytes of content this run put on the hub and fetched from it, as stored there (chunks
  /// compressed, blobs whole): what moving content in chunks saves.
  public var contentBytesSent: UInt64 = 0
  public var contentBytesReceived: UInt64 = 0
}

/// Pushes local versions, pulls remote ones, and keeps the local tree showing every path's
/// current version; conflicts are data (several heads), computed by `DocumentModel`.
///
/// One background loop talks to the hub; everything it shares with the file system's threads
/// is under one lock, which it never holds while waiting for the hub. Lock order: the engine's
/// lock, then the tree's; the tree never calls the engine while holding its own lock.
public final class SyncEngine: @unchecked Sendable {
  /// Local operations, noted by the file system as they happen.
  public let changeLog = ChangeLog()
  /// Conflicts found and resolved, going offline and back, refused records, finished
  /// transfers: what `docsync events` streams and desktop notifications come from.
  public let events = EventLog()
  /// How long the paths of an editor's save must be quiet before they become versions. It is
  /// most of the time an edit takes to reach other devices; an editor's save steps (temporary
  /// file, rename, chmod) come within a few milliseconds, and a file open for writing waits
  /// for its close anyway.
  public let quietMilliseconds: UInt64
  public let hubDescription: String
  /// How long the heads of a document in conflict must stay the same before it is merged
  /// automatically (see `MergeWatch`).
  public let mergeSettleMilliseconds: UInt64

  let store: LocalStore
  let hub: any Hub
  /// Whether new versions move their content as chunks (when the hub stores objects); false
  /// keeps whole blobs, as every version before chunks did.
  let contentInChunks: Bool
  /// The one owner of this device's content: every read, write, hash and removal of it.
  let blobs: ContentStore
  let logger: Logger
  private var mutex = pthread_mutex_t()

  // Guarded by `mutex`.
  var known = VersionSet()
  var state = LibraryState(VersionSet())
  /// The earlier versions of every document, for `.history`.
  var history = HistoryIndex()
  var shown: [DocumentPath: ShownRecord] = [:]
  var outbox: [VersionID] = []
  var author: VersionAuthor
  var cursor: HubCursor
  var deferred: Set<DocumentPath> = []
  /// Remote file versions to write into the tree, by path: their content is copied outside
  /// the lock (`applyPending`). Their paths stay in `deferred` until they land.
  var pendingApplies: [DocumentPath: FileApply] = [:]
  /// Paths whose remote content is being written, outside the lock.
  var applying: Set<DocumentPath> = []
  /// Small content just fetched (checked against its hash), held in memory until the files
  /// that take it are written (`applyPending`), so that it is written once, into them, with
  /// no blob file of its own; what no file took then becomes a blob. Never durable: a crash
  /// before it lands leaves records whose content is fetched again.
  var fetchedContent: [ContentHash: [UInt8]] = [:]
  /// Bytes of content objects this run put on the hub and fetched from it (as stored:
  /// compressed): what chunks save shows here.
  var objectBytesSent: UInt64 = 0
  var objectBytesReceived: UInt64 = 0
  /// When the chunk lists of content no longer held were last let go (monotonic ms).
  var lastChunkListTrim: UInt64 = 0
  /// Paths of a window whose files are being hashed, outside the lock.
  var recording: Set<DocumentPath> = []
  /// Paths whose content could not be read or copied for upload, and when to try again.
  var unrecordable: [DocumentPath: RecordRetry] = [:]
  /// Blobs to fetch again (missing, or found damaged).
  var missingBlobs: [ContentHash: MissingBlob] = [:]
  /// Blobs among `missingBlobs` whose file is there and cannot be read (a failing disk): fetched
  /// again over it, which stays until the hub's copy has arrived whole.
  var unreadableBlobs: Set<ContentHash> = []
  /// Blobs checked against their hash, as their files were then.
  var verifiedBlobs: [ContentHash: BlobIdentity] = [:]
  /// Remote changes that were being applied when the last run ended, settled at start.
  var intents: [ApplyIntent] = []
  /// Versions whose content this device cannot provide (its blob was damaged and the file
  /// has changed since): tried again when a sync is asked for and at the next start, and
  /// reported by `synchronize`.
  var stalled: Set<VersionID> = []
  /// Of the versions ever held back, those whose event was posted: a version that fails at
  /// every `docsync sync` is told once, not at every try.
  var heldBackAnnounced: Set<VersionID> = []
  /// The merged views people may copy over a document, by path: the heads each was made from
  /// and its content's hash (see `noteMergedView`).
  var mergedViews: [DocumentPath: (heads: [VersionID], hash: ContentHash)] = [:]
  /// Automatic merging: the attributes, and which merges wait for their heads to settle.
  var merging = MergeWatch()
  /// How long until a waiting merge is due (milliseconds), for the loop's sleep.
  var mergeWakeIn: UInt64?
  weak var tree: (any LocalTree)?
  var paused = false
  /// What never syncs: the built-in names and the current `.docsyncignore`.
  var ignore = IgnoreRules.builtIn
  var offline: (since: UInt64, reason: String)?
  /// Since when (wall milliseconds) syncing fails here, not at the hub, and why; `request` is
  /// the latest sync request that the latest failed turn had seen when it began.
  var failing: (since: UInt64, reason: String, request: UInt64)?
  /// Since when (wall milliseconds) `failing` or `unrecordable` has held something: what
  /// `docsync events` heard as `failing`, and will hear as `recovered`.
  var failingSince: UInt64?
  var lastSync: UInt64?
  /// Versions pushed since the outbox was last empty, and the bytes they carry.
  var uploaded = (files: 0, bytes: UInt64(0))
  /// Queued versions whose content is on the hub already, their records not yet: counted as
  /// done, so that progress moves with each file rather than with each batch of records.
  var contentUploaded: Set<VersionID> = []
  /// Content to fetch and fetched since pulling last found nothing new.
  var download = SyncStatus.Transfer()
  var syncRequested: UInt64 = 0
  /// When the latest `synchronize` asked (monotonic milliseconds).
  var syncRequestedAt: UInt64 = 0
  /// How many `synchronize` calls wait now. A request whose caller gave up no longer hurries
  /// the loop: it once retried an unreachable hub every 20 ms until the hub came back.
  var syncWaiters = 0
  var syncCompleted: UInt64 = 0
  var running = false
  /// `docsync prune` requests, the outcome of the latest one the loop ran, and when pruning
  /// last ran (wall-clock milliseconds; the loop prunes by itself a day after that).
  var pruneRequested: UInt64 = 0
  var pruneOutcome: (request: UInt64, result: Result<PruneReport, SyncError>)?
  var lastPrune: UInt64 = 0
  /// Where this device is in the hub's list of erasures, and when it last looked (monotonic
  /// milliseconds).
  var erasureCursor: HubCursor
  var lastErasureLook: UInt64 = 0
  /// `docsync forget` requests waiting for the loop, and the outcomes it has not handed back.
  var forgetQueue: [(request: UInt64, path: DocumentPath)] = []
  var forgetOutcomes: [UInt64: Result<ForgetOutcome, SyncError>] = [:]
  var forgetRequested: UInt64 = 0
  /// The request the loop is running now: its caller waits for it whatever happens.
  var forgetRunning: UInt64?
  /// When the loop last looked at the size of the content cache (monotonic milliseconds).
  var lastCacheTrim: UInt64 = 0
  /// The conflicts whose merge bases ``fetchMergeBases()`` last made sure of.
  var conflictsWithBases: [DocumentPath: [VersionRecord]] = [:]
  private var loop: Task<Void, Never>?
  /// The thread the loop and the engine's other tasks run on: never the shared cooperative
  /// pool, which FUSE threads blocked in a wait could starve.
  let executor = EngineExecutor(name: "docsync-sync")

  /// Loads the engine's state from `store`; `deviceName` renames this device from now on.
  public init(
    store: LocalStore, hub: any Hub, hubDescription: String, deviceName: String,
    quietMilliseconds: UInt64 = 150, mergeSettleMilliseconds: UInt64 = 1000,
    contentInChunks: Bool = true, logger: Logger = Logger(label: "docsync.sync")
  ) throws(SyncError) {
    pthread_mutex_init(&mutex, nil)
    self.contentInChunks = contentInChunks
    self.store = store
    self.hub = hub
    self.hubDescription = hubDescription
    self.quietMilliseconds = quietMilliseconds
    self.mergeSettleMilliseconds = mergeSettleMilliseconds
    self.logger = logger
    blobs = store.content
    blobs.removeLeftovers()
    // Only the heads come into memory: every older record stays in the local database and is
    // read when a decision needs it, so start-up and memory follow the live library. An
    // earlier docsync stored remote records unchecked: one that would trap or misbehave here is
    // left out at every start, rather than crash every start.
    var heads: [VersionRecord] = []
    let snapshot: SyncSnapshot
    do {
      try Self.indexStoredRecords(store, logger: logger)
      snapshot = try store.loadSync { id, payload in
        if let record = StoreArchive.decode(id, payload, logger: logger) { heads.append(record) }
      }
    } catch {
      throw .local(error.description)
    }
    var deviceID: DeviceID
    if let bytes = snapshot.metadata["device_id"], bytes.count == 16 {
      deviceID = DeviceID(high: Self.word(bytes[0..<8]), low: Self.word(bytes[8..<16]))
    } else {
      var generator = SystemRandomNumberGenerator()
      deviceID = DeviceID(high: generator.next(), low: generator.next())
    }
    author = VersionAuthor(deviceID: deviceID, deviceName: deviceName)
    cursor = HubCursor(
      serialized: snapshot.metadata["cursor"].map { String(decoding: $0, as: UTF8.self) } ?? "")
    erasureCursor = HubCursor(
      serialized: snapshot.metadata["erasure_cursor"].map { String(decoding: $0, as: UTF8.self) }
        ?? "")
    let now = wallMilliseconds()
    for record in heads {
      // A stored time far ahead of the clock does not drag this device's clock along again.
      // Heads are enough: every other version is older than a version that follows it.
      if record.modified.wallMilliseconds <= saturatingSum(now, RecordCheck.maximumLeadMilliseconds)
      {
        author.observe(record)
      }
    }
    known = VersionSet(heads: heads, archive: StoreArchive(store: store, logger: logger))
    heads = []
    state = LibraryState(known)
    // The rows per path are read one at a time, and each path is the one the state holds
    // already where there is one: a path kept in several tables is then stored once.
    var historyPaths: [DocumentPath] = []
    do throws(LocalStoreError) {
      try store.loadHistoryPaths { historyPaths.append(sharedPath($0)) }
      history = HistoryIndex(pathsWithEarlierVersions: historyPaths)
      historyPaths = []
      try store.loadShown { shown[sharedPath($0.path)] = $0 }
    } catch {
      throw .local(error.description)
    }
    outbox = snapshot.outbox.compactMap { Digest256(bytes: $0).map(VersionID.init) }
    intents = snapshot.intents
    ignore = rulesOfCurrentIgnoreFile() ?? .builtIn
    adoptMergeAttributes()
    // A new state folder first prunes a day after it was made, not at once: its history is
    // young, and retention's first day keeps it at one version per 30 seconds to an hour.
    lastPrune =
      snapshot.metadata["last_prune"].flatMap { UInt64(String(decoding: $0, as: UTF8.self)) }
      ?? now
    let idBytes = Self.bytes(deviceID.high) + Self.bytes(deviceID.low)
    try persist([
      .setMetadata(key: "last_prune", value: Array(String(lastPrune).utf8)),
      .setMetadata(key: "device_id", value: idBytes),
      .setMetadata(key: "device_name", value: Array(deviceName.utf8)),
    ])
  }

  deinit { pthread_mutex_destroy(&mutex) }

  /// Fills the index columns of records stored before schema v5 (decoding each once), then
  /// derives the heads and the paths with history: once, at the first start after an update.
  static func indexStoredRecords(_ store: LocalStore, logger: Logger) throws(LocalStoreError) {
    guard try !store.recordsIndexed() else { return }
    let decode = { StoreArchive.decode($0, $1, logger: logger) }
    var count = 0
    while true {
      let batch = try store.unindexedVersions(limit: 2000)
      guard !batch.isEmpty else { break }
      try store.indexVersions(
        batch.map { id, payload in
          // A record an earlier docsync stored unchecked is indexed as nothing: no path, no
          // parents, so it hides no head, as when it was left out at every load.
          guard let record = decode(id, payload) else {
            return StoredVersion(
              id: id, payload: payload, path: [], parents: [], isDocument: false,
              contentHash: nil)
          }
          return record.stored
        })
      count += batch.count
    }
    try store.finishIndexing()
    logger.info("indexed \(count) stored version record(s)")
  }

  func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return try body()
  }

  static func word(_ bytes: ArraySlice<UInt8>) -> UInt64 {
    bytes.reduce(0) { $0 << 8 | UInt64($1) }
  }

  static func bytes(_ word: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: word >> UInt64(56 - 8 * $0)) }
  }

  static func components(_ path: [UInt8]) -> [[UInt8]] {
    path.split(separator: UInt8(ascii: "/")).map(Array.init)
  }

  /// The path of `bytes` as the library state holds it, when it holds it: one copy of its
  /// components for every table that names the path.
  private func sharedPath(_ bytes: [UInt8]) -> DocumentPath {
    let path = DocumentPath(components: Self.components(bytes))
    guard let index = state.entries.index(forKey: path) else { return path }
    return state.entries.keys[index]
  }

  func persist(_ changes: [SyncChange]) throws(SyncError) {
    do {
      try store.applySync(changes)
    } catch {
      throw .local(error.description)
    }
  }

  // MARK: - Life cycle

  /// Connects the engine to the tree it keeps in sync and starts the background loop, which
  /// first settles what the last run left unfinished and notes what changed while the mount
  /// was down.
  public func start(tree: any LocalTree) {
    let intents = withLock {
      self.tree = tree
      running = true
      defer { self.intents = [] }
      return self.intents
    }
    // In the loop, not here: settling hashes files, and the mount is ready (and its log
    // open) before that ends.
    loop = Task(executorPreference: executor) { [self] in
      let wentBack = settleAfterRestart(tree, intents: intents)
      let unrecorded = withLock { noteOfflineChanges(tree, except: wentBack) }
      settleUnrecordedFiles(tree, unrecorded)
      await run()
    }
  }

  /// Stops the loop and records what is still pending locally (it goes out at the next mount).
  public func stop() async {
    withLock { running = false }
    changeLog.wake.signal()
    await loop?.value
    recordWindow(force: true)
    events.close()
  }

  /// Compares the tree with what it showed at the last unmount: edits made while the mount
  /// was down (or lost to a crash before they were recorded) become local operations.
  ///
  /// A path that holds what its current version holds, though no record says it shows it, is
  /// a remote change that landed before a crash took its record (see
  /// ``unrecordedEntry(_:current:)``): it is shown again, not published. Returns the files
  /// that must be hashed to tell, for ``settleUnrecordedFiles(_:_:)``. Called with the lock held.
  ///
  /// The tree is walked once without keeping what it holds: only which shown paths it still
  /// has, as the keys `shown` holds already (a large library's tree is not copied at start).
  private func noteOfflineChanges(_ tree: any LocalTree, except wentBack: Set<DocumentPath>)
    -> [UnrecordedFile]
  {
    var present: Set<DocumentPath> = []
    present.reserveCapacity(shown.count)
    var landed: [DocumentPath: ShownRecord?] = [:]
    var toHash: [UnrecordedFile] = []
    tree.forEachEntry(under: .root) { path, entry in
      guard !path.isRoot else { return }
      let index = shown.index(forKey: path)
      if let index { present.insert(shown.keys[index]) }
      guard !wentBack.contains(path) else { return }
      let version = index.flatMap { known[VersionID(digest(shown.values[$0].versionID))] }
      if let index, let version, !version.content.isDeletion {
        let record = shown.values[index]
        if case .file(_, let size, let mtime, let ctime, _) = entry,
          size != record.size || mtime != record.modificationTime || ctime != record.changeTime
        {
          changeLog.note(.write(path))
        }
        return
      }
      // Shown as a deletion, or not shown at all.
      guard version != nil || (!ignore.isIgnored(path) && entry != .special) else { return }
      switch Self.unrecordedEntry(entry, current: state.entries[path]) {
      case .landed(let current):
        landed[path] = shownRecord(path, current, entry)
      case .landedIfSameContent(let current):
        if case .file(let inode, _, _, _, _) = entry {
          toHash.append(UnrecordedFile(path: path, entry: entry, inode: inode, current: current))
        }
      case .localEdit:
        changeLog.note(.create(path))
      }
    }
    for (path, record) in shown where !present.contains(path) {
      guard let version = known[VersionID(digest(record.versionID))], !version.content.isDeletion
      else { continue }
      // The current version is a deletion (or the path has none): a removal that landed.
      if state.entries[path] == nil {
        let winner = known.pathState(at: path)?.winner
        landed.updateValue(winner.map { shownRecord(path, $0, nil) }, forKey: path)
      } else {
        changeLog.note(.remove(path))
      }
    }
    if !landed.isEmpty {
      logger.info(
        "\(landed.count) remote change(s) had landed without their record before the last run ended"
      )
      showAgain(landed)
    }
    // Remote versions that arrived but were not yet written into the tree.
    deferred.formUnion(state.entries.keys)
    return toHash
  }

  func digest(_ bytes: [UInt8]) -> Digest256 {
    Digest256(bytes: bytes) ?? Digest256(bytes: [UInt8](repeating: 0, count: 32))!
  }

  // MARK: - Control

  /// Stops pushing and pulling; the mount keeps working and local versions queue.
  public func pause() {
    withLock { paused = true }
    changeLog.wake.signal()
  }

  public func resume() {
    withLock { paused = false }
    changeLog.wake.signal()
  }

  /// Records pending local changes now, pushes them, pulls everything new, and returns when
  /// the tree shows the hub's current state (or throws at the deadline).
  public func synchronize(timeout: Duration) async throws(SyncError) {
    let (target, askedAt) = try withLock { () throws(SyncError) -> (UInt64, UInt64) in
      if paused { throw .paused }
      // A person who asks for a sync may have mended the disk: what could not be read is
      // read again, and reported again if it still cannot be.
      stalled.removeAll()
      syncRequested += 1
      syncRequestedAt = monotonicMilliseconds()
      syncWaiters += 1
      return (syncRequested, syncRequestedAt)
    }
    defer { withLock { syncWaiters -= 1 } }
    changeLog.wake.signal()
    // On the monotonic clock, as every wait of the engine: the wall clock may be hours off, and
    // may be stepped while the sync runs.
    let deadline = MonotonicTimer.deadline(after: timeout)
    while true {
      if withLock({ syncCompleted >= target }) {
        let stuck = withLock { stalled.compactMap { known[$0]?.path.description }.sorted() }
        if !stuck.isEmpty {
          throw .local(
            "cannot upload \(stuck.joined(separator: ", ")): the saved content is damaged "
              + "and the file has changed since (see the log)")
        }
        return
      }
      if withLock({ paused }) { throw .paused }
      // A path this sync tried to record and could not, or a turn of the loop that failed
      // here, not at the hub: waiting longer would not help.
      if let failure = withLock({
        unrecordableReport(since: askedAt) ?? failingReport(request: target, since: askedAt)
      }) {
        throw .local(failure)
      }
      // Checked after the completion test, so a caller that was not scheduled for a while
      // still sees a sync that finished in time.
      if MonotonicTimer.now() >= deadline { break }
      await MonotonicTimer.shared.sleep(for: .milliseconds(10))
    }
    throw withLock { () -> SyncError in
      if let failure = unrecordableReport(since: 0) ?? failingReport(request: 0, since: 0) {
        return .local(failure)
      }
      if let offline { return .timeout("the hub is unreachable: \(offline.reason)") }
      var reasons: [DocumentPath: ContentWait] = [:]
      for item in waitingForContent() where item.version == nil { reasons[item.path] = item.reason }
      let busy = deferred.union(changeLog.peekPaths()).sorted().prefix(3).map { path in
        reasons[path].map { "\(path) (\($0.rawValue))" } ?? path.description
      }
      if !busy.isEmpty {
        return .timeout(
          "not up to date after \(timeout): still waiting for \(busy.joined(separator: ", "))")
      }
      return .timeout("not up to date after \(timeout)")
    }
  }

  /// The paths whose content could not be read for upload in an attempt that began at or after
  /// `since` (monotonic milliseconds), and why, in one line; nil when there are none. Called
  /// with the lock held.
  func unrecordableReport(since: UInt64) -> String? {
    let failed = unrecordable.filter { $0.value.began >= since }.sorted { $0.key < $1.key }
    guard !failed.isEmpty else { return nil }
    let named = failed.prefix(3).map { "\($0.key) (\($0.value.reason))" }
    let more = failed.count > 3 ? " and \(failed.count - 3) more" : ""
    return "cannot read \(named.joined(separator: ", "))\(more) to sync it; trying again"
  }

  /// Why syncing failed here (not at the hub) in a turn that began after sync request `request`
  /// was made, or in a commit of the state at or after `since` (monotonic milliseconds), in one
  /// line; nil when it did not. Called with the lock held.
  func failingReport(request: UInt64, since: UInt64) -> String? {
    // By the request the turn had seen, not by when it failed: a turn that began before the
    // sync was asked for may fail after it, for a cause already mended (the disk has room
    // again), and the next turn would succeed.
    if let failing, failing.request >= request {
      return "cannot sync: \(failing.reason); trying again"
    }
    if let failure = store.writeFailure, failure.at >= since {
      return "cannot sync: cannot write the state database: \(failure.reason); trying again"
    }
    return nil
  }

  /// Where syncing stands.
  public func status() -> SyncStatus {
    withLock {
      let pendingLocal = changeLog.quietFor().pending
      let syncState: SyncStatus.State
      if paused {
        syncState = .paused
      } else if let offline {
        syncState = .offline(since: offline.since, reason: offline.reason)
      } else if let failing {
        syncState = .cannotSync(since: failing.since, reason: failing.reason)
      } else if let failure = store.writeFailure {
        syncState = .cannotSync(
          since: failingSince ?? wallMilliseconds(),
          reason: "cannot write the state database: \(failure.reason)")
      } else if download.doneFiles < download.totalFiles {
        syncState = .downloading
      } else if outbox.contains(where: { !stalled.contains($0) }) {
        // A version held back is not on its way: `heldBack` names it.
        syncState = .uploading
      } else if pendingLocal || !deferred.isEmpty {
        syncState = .pending
      } else {
        syncState = .upToDate
      }
      var upload = SyncStatus.Transfer()
      let waiting = outbox.filter { !stalled.contains($0) }.compactMap { known[$0] }
      let sent = waiting.filter { contentUploaded.contains($0.id) }
      upload.doneFiles = uploaded.files + sent.count
      // A version may reuse content another device claimed the size of: added without a trap.
      upload.doneBytes = sent.reduce(uploaded.bytes) { saturatingSum($0, $1.content.size ?? 0) }
      upload.totalFiles = uploaded.files + waiting.count
      upload.totalBytes = waiting.reduce(uploaded.bytes) {
        saturatingSum($0, $1.content.size ?? 0)
      }
      return SyncStatus(
        deviceName: author.deviceName, deviceID: author.deviceID.description, hub: hubDescription,
        state: syncState, pendingUploads: outbox.count, pendingLocalChanges: pendingLocal,
        upload: upload, download: download, lastSync: lastSync,
        conflicts: state.conflicts.map { ($0.key, $0.value.count) }.sorted { $0.0 < $1.0 },
        waiting: waitingForContent(),
        unreadable: unrecordable.map { ($0.key, $0.value.reason) }.sorted { $0.path < $1.path },
        heldBack: Set(stalled.compactMap { known[$0]?.path }).sorted(),
        contentBytesSent: objectBytesSent, contentBytesReceived: objectBytesReceived)
    }
  }

  // MARK: - Versions, for `.versions`

  /// Every document in conflict and its conflict versions.
  public func conflicts() -> [DocumentPath: [VersionRecord]] { withLock { state.conflicts } }

  /// The current version of the document at `path` and its conflict versions; nil when the
  /// path holds no synced document (a folder, an ignored file, nothing).
  public func versions(of path: DocumentPath) -> (
    current: VersionRecord, conflicts: [VersionRecord]
  )? {
    withLock {
      guard case .document(let record)? = state.entries[path] else { return nil }
      return (record, state.conflicts[path] ?? [])
    }
  }

  /// Notes the content of `.versions/<path>/merged<ext>` as made from `heads`, so that writing
  /// those bytes over the document is taken as choosing the merge.
  public func noteMergedView(at path: DocumentPath, heads: [VersionID], content: [UInt8]) {
    let hash = ContentHash(of: content)
    withLock { mergedViews[path] = (heads, hash) }
  }

  /// The heads of the document at `path` and their nearest common ancestor, when it is in
  /// conflict.
  public func mergeHeads(of path: DocumentPath) -> MergeHeads? {
    withLock {
      guard case .document(let current)? = state.entries[path],
        let others = state.conflicts[path], !others.isEmpty
      else { return nil }
      let base = known.nearestCommonAncestor(of: [current.id] + others.map(\.id))
      var pairBases: [VersionID: VersionRecord] = [:]
      for other in others {
        pairBases[other.id] = known.nearestCommonAncestor(of: [current.id, other.id])
      }
      return MergeHeads(current: current, others: others, base: base, pairBases: pairBases)
    }
  }

  /// Records a person's resolution and brings the tree to its result; false if it resolved
  /// nothing.
  @discardableResult
  public func resolve(_ resolution: Resolution) -> Bool {
    let touched = withLock { () -> Set<DocumentPath>? in
      let changes = resolution.changes(in: known, state: state)
      guard !changes.isEmpty else { return nil }
      let records = author.record(
        changes, known: known, now: wallMilliseconds(), chunks: chunkRoot(for:size:))
      do {
        try persist(
          records.flatMap {
            [.addVersion($0.stored), .enqueue(id: $0.id.bytes)]
          })
      } catch {
        logger.error("cannot record a resolution: \(error)")
        return nil
      }
      outbox += records.map(\.id)
      let touched = known.insert(contentsOf: records)
      updateState(touched: touched)
      reconcile(touched)
      tree?.conflictsChanged(at: touched)
      return touched
    }
    guard let touched else { return false }
    // `mv .versions/<path>/<v> <path>` returns once the path shows the chosen content.
    applyPending(only: touched)
    return true
  }
}
