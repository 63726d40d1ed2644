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

  // Guarded by `mutex`. Each owner keeps its own facts in agreement (see its type); the
  // engine decides under the lock which owner learns what, and does I/O outside it.
  /// What this device knows of the library: records, state, history, what paths show, the
  /// outbox, and where it is in the hub's lists.
  var library: LibraryKnowledge
  /// Remote changes on their way into the tree.
  var applies = ApplyState()
  /// Local changes on their way to becoming versions.
  var recorder = RecordingState()
  /// Merged views and automatic merges.
  var merges = MergeState()
  /// The link with the hub, its status, and the requests waiting for the loop.
  var connection = ConnectionState()
  /// Content on its way: blobs to fetch again, small content fetched and not yet written,
  /// uploads ahead of their records, bytes moved.
  var contentState = ContentState()
  weak var tree: (any LocalTree)?
  private var loop: Task<Void, Never>?
  /// The thread the loop and the engine's other tasks run on: never the shared cooperative
  /// pool, which FUSE threads blocked in a wait could starve.
  let executor = EngineExecutor(name: "docsync-sync")
  /// The thread chunked content's puts and fetches run on, so that one batch goes to or comes
  /// from the hub while the loop reads, checks or writes the one before.
  let transferExecutor = EngineExecutor(name: "docsync-transfer")

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
    var author = VersionAuthor(deviceID: deviceID, deviceName: deviceName)
    let cursor = HubCursor(
      serialized: snapshot.metadata["cursor"].map { String(decoding: $0, as: UTF8.self) } ?? "")
    let erasureCursor = HubCursor(
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
    library = LibraryKnowledge(
      known: VersionSet(heads: heads, archive: StoreArchive(store: store, logger: logger)),
      author: author, cursor: cursor, erasureCursor: erasureCursor)
    heads = []
    // The rows per path are read one at a time, and each path is the one the state holds
    // already where there is one: a path kept in several tables is then stored once.
    var historyPaths: [DocumentPath] = []
    do throws(LocalStoreError) {
      try store.loadHistoryPaths { historyPaths.append(sharedPath($0)) }
      library.loadHistory(pathsWithEarlierVersions: historyPaths)
      historyPaths = []
      try store.loadShown { library.shown[sharedPath($0.path)] = $0 }
    } catch {
      throw .local(error.description)
    }
    library.loadOutbox(snapshot.outbox.compactMap { Digest256(bytes: $0).map(VersionID.init) })
    applies = ApplyState(intents: snapshot.intents)
    _ = recorder.adopt(rulesOfCurrentIgnoreFile() ?? .builtIn)
    adoptMergeAttributes()
    // A new state folder first prunes a day after it was made, not at once: its history is
    // young, and retention's first day keeps it at one version per 30 seconds to an hour.
    connection.lastPrune =
      snapshot.metadata["last_prune"].flatMap { UInt64(String(decoding: $0, as: UTF8.self)) }
      ?? now
    let idBytes = Self.bytes(deviceID.high) + Self.bytes(deviceID.low)
    try persist([
      .setMetadata(key: "last_prune", value: Array(String(connection.lastPrune).utf8)),
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
    guard let index = library.state.entries.index(forKey: path) else { return path }
    return library.state.entries.keys[index]
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
      connection.running = true
      return applies.takeIntents()
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
    withLock { connection.running = false }
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
    present.reserveCapacity(library.shown.count)
    var landed: [DocumentPath: ShownRecord?] = [:]
    var toHash: [UnrecordedFile] = []
    tree.forEachEntry(under: .root) { path, entry in
      guard !path.isRoot else { return }
      let index = library.shown.index(forKey: path)
      if let index { present.insert(library.shown.keys[index]) }
      guard !wentBack.contains(path) else { return }
      let version = index.flatMap {
        library.known[VersionID(digest(library.shown.values[$0].versionID))]
      }
      if let index, let version, !version.content.isDeletion {
        let record = library.shown.values[index]
        if case .file(_, let size, let mtime, let ctime, _) = entry,
          size != record.size || mtime != record.modificationTime || ctime != record.changeTime
        {
          changeLog.note(.write(path))
        }
        return
      }
      // Shown as a deletion, or not shown at all.
      guard version != nil || (!recorder.ignore.isIgnored(path) && entry != .special) else {
        return
      }
      switch Self.unrecordedEntry(entry, current: library.state.entries[path]) {
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
    for (path, record) in library.shown where !present.contains(path) {
      guard let version = library.known[VersionID(digest(record.versionID))],
        !version.content.isDeletion
      else { continue }
      // The current version is a deletion (or the path has none): a removal that landed.
      if library.state.entries[path] == nil {
        let winner = library.known.pathState(at: path)?.winner
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
    applies.postpone(contentsOf: library.state.entries.keys)
    return toHash
  }

  func digest(_ bytes: [UInt8]) -> Digest256 {
    Digest256(bytes: bytes) ?? Digest256(bytes: [UInt8](repeating: 0, count: 32))!
  }

  // MARK: - Control

  /// Stops pushing and pulling; the mount keeps working and local versions queue.
  public func pause() {
    withLock { connection.paused = true }
    changeLog.wake.signal()
  }

  public func resume() {
    withLock { connection.paused = false }
    changeLog.wake.signal()
  }

  /// Records pending local changes now, pushes them, pulls everything new, and returns when
  /// the tree shows the hub's current state (or throws at the deadline).
  public func synchronize(timeout: Duration) async throws(SyncError) {
    let (target, askedAt) = try withLock { () throws(SyncError) -> (UInt64, UInt64) in
      if connection.paused { throw .paused }
      // A person who asks for a sync may have mended the disk: what could not be read is
      // read again, and reported again if it still cannot be.
      library.retryHeldBack()
      let now = monotonicMilliseconds()
      return (connection.requestSync(at: now), now)
    }
    defer { withLock { connection.syncWaiterLeft() } }
    changeLog.wake.signal()
    // On the monotonic clock, as every wait of the engine: the wall clock may be hours off, and
    // may be stepped while the sync runs.
    let deadline = MonotonicTimer.deadline(after: timeout)
    while true {
      if withLock({ connection.isCompleted(target) }) {
        let stuck = withLock {
          library.stalled.compactMap { library.known[$0]?.path.description }.sorted()
        }
        if !stuck.isEmpty {
          throw .local(
            "cannot upload \(stuck.joined(separator: ", ")): the saved content is damaged "
              + "and the file has changed since (see the log)")
        }
        return
      }
      if withLock({ connection.paused }) { throw .paused }
      // A path this sync tried to record and could not, or a turn of the loop that failed
      // here, not at the hub: waiting longer would not help.
      if let failure = withLock({
        recorder.report(since: askedAt) ?? failingReport(request: target, since: askedAt)
      }) {
        throw .local(failure)
      }
      // Checked after the completion test, so a caller that was not scheduled for a while
      // still sees a sync that finished in time.
      if MonotonicTimer.now() >= deadline { break }
      await MonotonicTimer.shared.sleep(for: .milliseconds(10))
    }
    throw withLock { () -> SyncError in
      if let failure = recorder.report(since: 0) ?? failingReport(request: 0, since: 0) {
        return .local(failure)
      }
      if let offline = connection.offline {
        return .timeout("the hub is unreachable: \(offline.reason)")
      }
      var reasons: [DocumentPath: ContentWait] = [:]
      for item in waitingForContent() where item.version == nil { reasons[item.path] = item.reason }
      let busy = applies.deferred.union(changeLog.peekPaths()).sorted().prefix(3).map { path in
        reasons[path].map { "\(path) (\($0.rawValue))" } ?? path.description
      }
      if !busy.isEmpty {
        return .timeout(
          "not up to date after \(timeout): still waiting for \(busy.joined(separator: ", "))")
      }
      return .timeout("not up to date after \(timeout)")
    }
  }

  /// Why syncing failed here (not at the hub) in a turn that began after sync request `request`
  /// was made, or in a commit of the state at or after `since` (monotonic milliseconds), in one
  /// line; nil when it did not. Called with the lock held.
  func failingReport(request: UInt64, since: UInt64) -> String? {
    if let reason = connection.failureSeen(by: request) {
      return "cannot sync: \(reason); trying again"
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
      if connection.paused {
        syncState = .paused
      } else if let offline = connection.offline {
        syncState = .offline(since: offline.since, reason: offline.reason)
      } else if let failing = connection.failing {
        syncState = .cannotSync(since: failing.since, reason: failing.reason)
      } else if let failure = store.writeFailure {
        syncState = .cannotSync(
          since: connection.failingSince ?? wallMilliseconds(),
          reason: "cannot write the state database: \(failure.reason)")
      } else if connection.download.doneFiles < connection.download.totalFiles {
        syncState = .downloading
      } else if !library.nothingToUpload {
        // A version held back is not on its way: `heldBack` names it.
        syncState = .uploading
      } else if pendingLocal || !applies.deferred.isEmpty {
        syncState = .pending
      } else {
        syncState = .upToDate
      }
      var upload = SyncStatus.Transfer()
      let waiting = library.uploadsWaiting
      let sent = waiting.filter { contentState.uploaded.contains($0.id) }
      upload.doneFiles = connection.uploaded.files + sent.count
      // A version may reuse content another device claimed the size of: added without a trap.
      upload.doneBytes = sent.reduce(connection.uploaded.bytes) {
        saturatingSum($0, $1.content.size ?? 0)
      }
      upload.totalFiles = connection.uploaded.files + waiting.count
      upload.totalBytes = waiting.reduce(connection.uploaded.bytes) {
        saturatingSum($0, $1.content.size ?? 0)
      }
      return SyncStatus(
        deviceName: library.author.deviceName, deviceID: library.author.deviceID.description,
        hub: hubDescription,
        state: syncState, pendingUploads: library.outbox.count, pendingLocalChanges: pendingLocal,
        upload: upload, download: connection.download, lastSync: connection.lastSync,
        conflicts: library.state.conflicts.map { ($0.key, $0.value.count) }.sorted { $0.0 < $1.0 },
        waiting: waitingForContent(),
        unreadable: recorder.unrecordable.map { ($0.key, $0.value.reason) }.sorted {
          $0.path < $1.path
        },
        heldBack: Set(library.stalled.compactMap { library.known[$0]?.path }).sorted(),
        contentBytesSent: contentState.bytesSent, contentBytesReceived: contentState.bytesReceived)
    }
  }

  /// Whether the document at `path` has changes the hub does not have yet: a change not yet
  /// recorded (open, or inside its quiet window), being recorded, or a version in the outbox.
  /// What `user.docsync.state` reports as ` upload`, for scripts that wait for a file to be
  /// safe elsewhere.
  ///
  /// Only the path's heads are looked up (in memory: a FUSE request waits on this): a version of
  /// the path in the outbox that is no head has a later one made here, also in the outbox, as
  /// no other device can follow a version it has not received.
  public func waitsToUpload(_ path: DocumentPath) -> Bool {
    if changeLog.isPending(path) { return true }
    return withLock {
      if recorder.isRecording(path) { return true }
      var heads = (library.state.conflicts[path] ?? []).map(\.id)
      if case .document(let record)? = library.state.entries[path] { heads.append(record.id) }
      return heads.contains { library.outbox.contains($0) }
    }
  }

  // MARK: - Versions, for `.versions`

  /// Every document in conflict and its conflict versions.
  public func conflicts() -> [DocumentPath: [VersionRecord]] {
    withLock { library.state.conflicts }
  }

  /// The current version of the document at `path` and its conflict versions; nil when the
  /// path holds no synced document (a folder, an ignored file, nothing).
  public func versions(of path: DocumentPath) -> (
    current: VersionRecord, conflicts: [VersionRecord]
  )? {
    withLock {
      guard case .document(let record)? = library.state.entries[path] else { return nil }
      return (record, library.state.conflicts[path] ?? [])
    }
  }

  /// Notes the content of `.versions/<path>/merged<ext>` as made from `heads`, so that writing
  /// those bytes over the document is taken as choosing the merge.
  public func noteMergedView(at path: DocumentPath, heads: [VersionID], content: [UInt8]) {
    let hash = ContentHash(of: content)
    withLock { merges.noteMergedView(at: path, heads: heads, hash: hash) }
  }

  /// The heads of the document at `path` and their nearest common ancestor, when it is in
  /// conflict.
  public func mergeHeads(of path: DocumentPath) -> MergeHeads? {
    withLock {
      guard case .document(let current)? = library.state.entries[path],
        let others = library.state.conflicts[path], !others.isEmpty
      else { return nil }
      let base = library.known.nearestCommonAncestor(of: [current.id] + others.map(\.id))
      var pairBases: [VersionID: VersionRecord] = [:]
      for other in others {
        pairBases[other.id] = library.known.nearestCommonAncestor(of: [current.id, other.id])
      }
      return MergeHeads(current: current, others: others, base: base, pairBases: pairBases)
    }
  }

  /// Records a person's resolution and brings the tree to its result; false if it resolved
  /// nothing.
  @discardableResult
  public func resolve(_ resolution: Resolution) -> Bool {
    let touched = withLock { () -> Set<DocumentPath>? in
      let changes = resolution.changes(in: library.known, state: library.state)
      guard !changes.isEmpty else { return nil }
      let records = library.author.record(
        changes, known: library.known, now: wallMilliseconds(), chunks: chunkRoot(for:size:))
      do {
        try persist(
          records.flatMap {
            [.addVersion($0.stored), .enqueue(id: $0.id.bytes)]
          })
      } catch {
        logger.error("cannot record a resolution: \(error)")
        return nil
      }
      let touched = updateState(library.queue(records))
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
