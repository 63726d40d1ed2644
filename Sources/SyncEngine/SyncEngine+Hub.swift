import DocumentModel
import Glibc
import Hub
import LocalStore

extension SyncEngine {
  /// The background loop: record quiet windows, push, pull, apply, wait for news.
  func run() async {
    _ = ProcessMemory.configured
    // Content moved since memory was last given back (bytes sent and received).
    var movedAtGiveBack: UInt64 = 0
    var backoff: UInt64 = 250
    var retryAt: UInt64 = 0
    // The latest sync request that a failed turn had seen: a newer one tries again at once.
    var failedTarget: UInt64 = 0
    while withLock({ connection.running }) {
      // Read before looking at anything, so that a wake-up in between is not missed.
      let seen = changeLog.wake.generation
      let (target, forced) = withLock {
        // The state database fails and recovers outside the engine (the tree's commits).
        noteFailingChanged()
        return connection.beginTurn()
      }
      let (quiet, pending) = changeLog.quietFor()
      if pending && (quiet >= quietMilliseconds || forced) {
        recordWindow(force: forced)
      }
      applyPending()
      let now = monotonicMilliseconds()
      let isPaused = withLock { connection.paused }
      if isPaused || (now < retryAt && !(forced && target > failedTarget)) {
        let untilRetry = Duration.milliseconds(Int(retryAt > now ? retryAt - now : 0))
        await waitForWork(seen: seen, limit: isPaused ? Self.idleWait : untilRetry)
        continue
      }
      do throws(SyncError) {
        try await push()
        // Pages land together, a few at a time (their small content waits in memory): each
        // batch costs three flushes of the disk whatever its size, which were most of a new
        // device's initial sync when every page of 512 records was a batch.
        while try await pull() {
          if withLock({ applyIsDue() }) { applyPending() }
        }
        applyPending()
        try await forgetIfAsked()
        try await learnErasures(now: forced)
        let wantedBlobs = try await serveWantedBlobs()
        let wantedObjects = try await serveWantedObjects()
        withLock { fetchAgainWhatWasPut(stillWanted: wantedBlobs.union(wantedObjects)) }
        try await fetchMissingBlobs()
        try await fetchMergeBases()
        try await autoMerge()
        await pruneIfDue()
        trimContentCacheIfDue()
        withLock { if !applies.deferred.isEmpty { reconcile(Array(applies.deferred)) } }
        applyPending()
        let (clean, tree) = withLock { () -> (Bool, (any LocalTree)?) in
          noteOnline()
          connection.succeeded(at: wallMilliseconds())
          noteFailingChanged()
          // Only a requested sync waits to be settled, and the check walks every pending
          // path: done on each turn of the loop, it made a burst of creates quadratic.
          return (forced && isSettled(), self.tree)
        }
        backoff = 250
        let moved = withLock {
          saturatingSum(contentState.bytesSent, contentState.bytesReceived)
        }
        if moved != movedAtGiveBack {
          movedAtGiveBack = moved
          ProcessMemory.giveBack()
        }
        if clean && forced {
          blobs.finishReleases()
          tree?.flushKernelCaches()
          withLock { connection.completeSync(through: target) }
        }
        if !forced {
          // A merge waiting for its heads to settle wakes the loop when it is due.
          let limit = withLock { merges.wakeIn }.map { min(Self.idleWait, .milliseconds(Int($0))) }
          await waitForWork(
            seen: seen, limit: limit ?? Self.idleWait, hubCursor: withLock { library.cursor })
        } else if !clean {
          await MonotonicTimer.shared.sleep(for: .milliseconds(10))
        }
      } catch {
        withLock { noteFailure(error, request: target) }
        // While a sync waits, a few times a second; else less and less often.
        failedTarget = target
        retryAt = monotonicMilliseconds() + (forced ? min(backoff, Self.waitedRetry) : backoff)
        backoff = min(backoff * 2, 10_000)
        await MonotonicTimer.shared.sleep(for: .milliseconds(20))
      }
    }
  }

  /// How long a failed turn waits before it tries again while a `docsync sync` waits for it
  /// (milliseconds).
  static let waitedRetry: UInt64 = 250

  /// Notes why a turn of the loop failed. The hub's failure makes this device offline. A local
  /// one (its disk is full, its state cannot be written) is not the hub's: the hub answered
  /// before it, as every turn asks the hub first, so the device is online and cannot sync.
  /// `request` is the latest sync request the turn had seen when it began. Called with the lock
  /// held.
  func noteFailure(_ error: SyncError, request: UInt64) {
    let now = wallMilliseconds()
    guard case .local(let reason) = error else {
      if connection.wentOffline(error.description, at: now) {
        logger.warning("offline: \(error); retrying")
        events.post(.offline(reason: error.description), time: now)
      }
      return
    }
    noteOnline()
    if connection.failedHere(reason, at: now, request: request) {
      logger.warning("cannot sync: \(reason); retrying")
    }
    noteFailingChanged()
  }

  /// Why syncing fails on this device now, whatever fails: the loop, the state database, or
  /// saves that cannot be read for upload; nil when nothing does. Called with the lock held.
  func failingReason() -> String? {
    connection.failing?.reason
      ?? store.writeFailure.map { "cannot write the state database: \($0.reason)" }
      ?? recorder.firstFailure
  }

  /// Tells `docsync events` (and the desktop) when syncing starts to fail on this device (see
  /// ``failingReason()``) and when it works again: one `failing` and one `recovered` however
  /// the failures overlap. Called with the lock held.
  func noteFailingChanged() {
    let reason = failingReason()
    let now = wallMilliseconds()
    switch connection.failureChanged(failing: reason, at: now) {
    case .began?:
      if let reason { events.post(.failing(reason: reason), time: now) }
    case .ended(let since)?:
      logger.info(
        "syncing again (failing since \(HLCTimestamp(wallMilliseconds: since).isoString))")
      events.post(.recovered(since: since), time: now)
    case nil:
      break
    }
  }

  /// The hub answered: ends being offline, if it was. Called with the lock held.
  func noteOnline() {
    guard let since = connection.cameOnline() else { return }
    logger.info(
      "back online (offline since \(HLCTimestamp(wallMilliseconds: since).isoString))")
    events.post(.online(since: since), time: wallMilliseconds())
  }

  /// The longest the loop sleeps with nothing to do. Waking is driven by events; this only bounds
  /// how old "last sync" in `docsync status` can be, at the cost of one look at the hub.
  static let idleWait = Duration.seconds(1)

  /// Sleeps until there may be work, at most `limit`: the quiet window of pending local changes
  /// ends (when it does, not up to a poll later: it is part of how long an edit takes to reach
  /// the other devices), a local change comes while none is pending or all are held back,
  /// something is asked of the engine, or the hub has records past `hubCursor`.
  func waitForWork(seen: Int, limit: Duration, hubCursor: HubCursor? = nil) async {
    let timeout =
      changeLog.sleepBeforeWindowEnds(quietMilliseconds).map {
        min(limit, .milliseconds(Int($0)))
      } ?? limit
    guard timeout > .zero else { return }
    let wake = changeLog.wake
    let hub = self.hub
    await withTaskGroup(of: Void.self) { group in
      if let hubCursor {
        group.addTask { _ = try? await hub.waitForChanges(after: hubCursor, timeout: timeout) }
      }
      group.addTask { await wake.wait(after: seen, timeout: timeout) }
      _ = await group.next()
      group.cancelAll()
    }
  }

  /// Nothing is left to do but what waits for files open for writing: their changes become
  /// versions, and remote changes to them are applied, after the last writer closes.
  /// Called with the lock held.
  ///
  /// `close(2)` returns before the kernel sends FUSE's RELEASE, so a file that was just written
  /// can still look open when `docsync sync` starts; only a writer still open some time after
  /// the request is taken for one that stays open.
  func isSettled() -> Bool {
    guard library.nothingToUpload else { return false }
    guard let tree else { return true }
    let writersMayWait = monotonicMilliseconds() - connection.syncRequestedAt > Self.releaseGrace
    let waitingForWriters = { (path: DocumentPath) in
      writersMayWait && tree.hasOpenWriter(at: path)
    }
    let pendingLocal = changeLog.peekPaths()
    if !pendingLocal.isEmpty && !pendingLocal.contains(where: waitingForWriters) { return false }
    guard applies.deferred.allSatisfy({ waitingForWriters($0) || pendingLocal.contains($0) }) else {
      return false
    }
    return !autoMergeWaits()
  }

  /// How long a sync waits for the release of files closed just before it (milliseconds).
  static let releaseGrace: UInt64 = 2000

  /// Uploads queued versions: blobs first, then the records that name them.
  func push() async throws(SyncError) {
    while true {
      let batch = withLock {
        connection.paused ? [] : library.nextUploads(limit: 512)
      }
      guard !batch.isEmpty else {
        withLock {
          if library.nothingToUpload {
            if let uploaded = connection.uploadIdle() {
              events.post(
                .transferred(direction: .upload, files: uploaded.files, bytes: uploaded.bytes),
                time: wallMilliseconds())
            }
            contentState.outboxEmptied()
          }
        }
        return
      }
      var ready: [VersionRecord] = []
      let asChunks = try await uploadChunks(of: batch)
      let putTogether = try await uploadSmallBlobs(of: batch)
      let handOver = withLock { blobsToHandOver(batch) }
      for record in batch {
        if let hash = record.content.blobHash {
          var provided =
            record.chunks == nil ? putTogether.contains(hash) : asChunks.contains(record.id)
          if !provided && record.chunks == nil {
            provided = try await uploadBlob(hash, handOver: handOver.contains(hash))
          }
          guard provided else {
            withLock {
              logger.error(
                "version of \(record.path) is held back: its content cannot be provided")
              if library.holdBack(record.id) {
                events.post(.heldBack(path: record.path), time: wallMilliseconds())
              }
            }
            continue
          }
          withLock { contentState.noteUploaded(record.id) }
        }
        ready.append(record)
      }
      guard !ready.isEmpty else { return }
      // What other devices will see must survive a power cut here: a record lost locally
      // after it reached the hub would be made again, and conflict with itself.
      store.syncJournal()
      do {
        try await hub.append(
          ready.map { record in
            HubRecord(
              id: record.id.bytes, payload: record.encoded,
              blobs: record.chunks.map { [$0.id.bytes] }
                ?? record.content.blobHash.map { [$0.bytes] } ?? [])
          })
      } catch {
        throw SyncError(error)
      }
      let sent = Set(ready.map(\.id))
      let released = try withLock { () throws(SyncError) -> [ContentHash] in
        try persist(ready.map { .dequeue(id: $0.id.bytes) })
        library.uploaded(sent)
        contentState.recordsSent(sent)
        connection.noteUploaded(
          files: ready.count, bytes: ready.reduce(0) { saturatingSum($0, $1.content.size ?? 0) })
        return blobsHeldByWorkingFiles(ready)
      }
      // The hub has them now, and the working files hold them: kept once here.
      blobs.release(released)
      logger.info("pushed \(ready.count) version(s)")
      logger.debug(
        "pushed versions of \(Set(ready.map(\.path.description)).sorted().joined(separator: ", "))")
      if ready.count < batch.count { return }
    }
  }

  /// Puts the small content of a batch of versions on the hub together
  /// (``Hub/putSmallBlobs(_:)``); returns what the hub has now. The rest, and content that
  /// does not read back right here, take ``uploadBlob(_:)``.
  func uploadSmallBlobs(of batch: [VersionRecord]) async throws(SyncError) -> Set<ContentHash> {
    guard hub.putsSmallBlobsTogether else { return [] }
    var small: [ContentHash: [UInt8]] = [:]
    for record in batch where record.kind == .file && record.chunks == nil {
      guard case .file(let hash, let size, _) = record.content, size <= Self.smallContent,
        small[hash] == nil, let bytes = openContent(hash, anywhere: true)?.readAll()
      else { continue }
      if bytes.count == size { small[hash] = bytes }
    }
    guard small.count > 1 else { return [] }
    let stored: Set<[UInt8]>
    do {
      stored = try await hub.putSmallBlobs(
        Dictionary(uniqueKeysWithValues: small.map { ($0.key.bytes, $0.value) }))
    } catch {
      throw SyncError(error)
    }
    return Set(small.keys.filter { stored.contains($0.bytes) })
  }

  /// Puts a blob on the hub unless it is there; false when this device cannot provide it.
  /// With `handOver`, the blob's own file goes to the hub when the hub can take it
  /// (``Hub/adoptBlob(hash:file:descriptor:checked:)``): the engine would drop it once the hub
  /// has it (``blobsToHandOver(_:)``), so copying it only to unlink it wrote every byte once
  /// more.
  func uploadBlob(_ hash: ContentHash, handOver: Bool = false) async throws(SyncError) -> Bool {
    do {
      if try await hub.hasBlob(hash: hash.bytes) { return true }
    } catch {
      throw SyncError(error)
    }
    // The hub cut the blob into objects (its twin) and has the content that way.
    if try await !twinRoots([hash]).isEmpty { return true }
    // Whether this device's copy could not be read: made again, it takes that file's place.
    var unreadable = false
    for attempt in 0..<2 {
      if attempt == 1 && !restoreBlob(hash, replacing: unreadable) { break }
      guard let file = openContent(hash, anywhere: true) else { continue }
      // A blob hashed as this run wrote it, unchanged since, is not hashed a second time: a
      // 1 GiB push spent a fifth of its CPU on SHA-256, half of it here.
      let checked = attempt == 0 && blobs.isChecked(file, hash)
      do {
        if handOver && attempt == 0 && blobs.isBlobFile(file, hash), let path = file.blobPath {
          if try await hub.adoptBlob(
            hash: hash.bytes, file: path, descriptor: file.descriptor, checked: checked)
          {
            // The file is the hub's now (or the hub had the blob, and it is dropped with the
            // batch as usual): nothing here vouches for a local blob of this hash any more.
            blobs.forgetChecked(hash)
            return true
          }
        }
        try await hub.putBlob(hash: hash.bytes, from: file.descriptor, checked: checked)
        if let size = file.identity()?.size {
          withLock { contentState.sent(UInt64(size)) }
        }
        return true
      } catch .integrity(let reason) {
        // Never upload content that no longer matches its name.
        logger.error(
          "local content \(hash.hex) does not match its hash and is not uploaded: \(reason)")
        blobs.remove(hash)
        // Fetched again unless the hub lacks it too (then it stays missing until restored).
        withLock { noteMissing(hash, .damagedHere) }
      } catch .local(let reason) {
        // This device's copy cannot be read (a failing disk): not the hub's failure, and not a
        // reason to hold back every other upload. A working file that still holds the content
        // makes it again; else the file stays as it is (it may be the only copy, and may read
        // again) and only this version waits, until the next start.
        logger.error("local content \(hash.hex) cannot be read and is not uploaded: \(reason)")
        unreadable = true
      } catch {
        throw SyncError(error)
      }
    }
    // A hand-over that a crash cut short may have left the content in the hub, unrecorded:
    // then it is nowhere else when the working file changed since.
    do {
      guard try await hub.recoverBlob(hash: hash.bytes) else { return false }
    } catch {
      throw SyncError(error)
    }
    logger.info("the hub has blob \(hash.hex), which this device no longer holds")
    return true
  }

  /// Makes a missing or damaged blob again from a working file that still holds that content
  /// (as its shown version says, with unchanged size and times); with `replacing`, over a blob
  /// file that is there but cannot be read. The files are found under the lock and copied
  /// outside it: the copy of a large file must not hold up `.versions` or `docsync status`.
  func restoreBlob(_ hash: ContentHash, replacing: Bool = false) -> Bool {
    let candidates = withLock { () -> [(path: DocumentPath, inode: UInt64)] in
      guard let tree else { return [] }
      return library.shown.compactMap { path, record in
        guard let version = library.known[VersionID(digest(record.versionID))],
          version.content.blobHash == hash,
          case .file(let inode, let size, let mtime, let ctime, _)? = tree.entry(at: path),
          size == record.size, mtime == record.modificationTime, ctime == record.changeTime
        else { return nil }
        return (path, inode)
      }
    }
    for (path, inode) in candidates {
      guard let file = blobs.openWorkingFile(inode) else { continue }
      // A file written since it was found holds other bytes, and the check below says so.
      if let (restored, _, _) = try? blobs.add(from: file, replacing: replacing), restored == hash {
        logger.info("rebuilt the content of \(path) from its file")
        return true
      }
    }
    return false
  }

  /// Pulls one page of records; false when there was nothing new.
  func pull() async throws(SyncError) -> Bool {
    let cursor = withLock { self.library.cursor }
    let page: HubPage
    do {
      page = try await hub.records(after: cursor, limit: 512)
    } catch {
      throw SyncError(error)
    }
    guard !page.records.isEmpty else {
      withLock {
        if let download = connection.downloadIdle() {
          events.post(
            .transferred(
              direction: .download, files: download.doneFiles, bytes: download.doneBytes),
            time: wallMilliseconds())
        }
      }
      return false
    }
    var arrived: [VersionRecord] = []
    for hubRecord in page.records {
      guard let digest = Digest256(bytes: hubRecord.id) else {
        logger.error("refused a hub record with a malformed id")
        continue
      }
      do throws(IntegrityError) {
        arrived.append(
          try VersionRecord(decoding: hubRecord.payload, expectedID: VersionID(digest)))
      } catch .newerFormat(let id, let field) {
        // Not skipped: this device would never see that version, nor what follows from it.
        // The page waits, and the reason is the one line `docsync sync` and status give.
        throw .local(
          "the hub has versions made by a newer docsync (version \(id.shortHex), record field \(field)): upgrade docsync on this device to go on syncing"
        )
      } catch {
        logger.error("refused hub record \(digest.hex): \(error)")
        events.post(
          .refused(version: digest.hex, path: "", device: "", reason: "\(error)"),
          time: wallMilliseconds())
      }
    }
    let (fresh, needed, inMemory, recordRoots) = withLock {
      () -> ([VersionRecord], [ContentHash: UInt64], Set<ContentHash>, [ContentHash: ContentRoot])
      in
      let fresh = admit(arrived)
      var parents: Set<VersionID> = []
      for record in fresh { parents.formUnion(record.parents) }
      // Content is fetched for versions that nothing supersedes yet: what a path may show.
      var needed: [ContentHash: UInt64] = [:]
      // Small files' content may come into memory, for their working files; the pattern and
      // attribute files' never does: the engine reads them from their blob as they arrive.
      var inMemory: Set<ContentHash> = []
      var blobWanted: Set<ContentHash> = []
      // Content that some version names as chunks moves as chunks, whichever version asks.
      var roots: [ContentHash: ContentRoot] = [:]
      for record in fresh {
        if let root = record.chunks, let hash = record.content.blobHash { roots[hash] = root }
      }
      for record in fresh {
        guard let hash = record.content.blobHash, !parents.contains(record.id),
          !blobs.contains(hash)
        else { continue }
        needed[hash] = record.content.size ?? 0
        if roots[hash] == nil, let root = knownChunkRoot(of: hash) { roots[hash] = root }
        if record.kind == .file, !Self.keepsBlob(record.path),
          record.content.size ?? .max <= Self.smallContent
        {
          inMemory.insert(hash)
        } else {
          blobWanted.insert(hash)
        }
      }
      return (fresh, needed, inMemory.subtracting(blobWanted), roots)
    }
    // Content that no version names as chunks may have a twin on the hub (an old blob it
    // cut into objects): asked for once for the page, and fetched as chunks like the rest.
    var roots = recordRoots
    roots.merge(try await twinRoots(needed.keys.filter { recordRoots[$0] == nil })) { $1 }
    withLock {
      connection.noteDownloadNeeded(
        files: needed.count, bytes: needed.values.reduce(0, saturatingSum))
    }
    // In the order of the hashes' bytes (the order of their hex names), named once each.
    var ordered = needed.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
    if !inMemory.isEmpty {
      let small = ordered.filter { inMemory.contains($0.key) }
      let oneChunk = small.compactMap { item in
        roots[item.key].flatMap { $0.height == 0 ? (item.key, $0) : nil }
      }
      var arrived = try await fetchSmallChunked(oneChunk)
      arrived.formUnion(
        try await fetchSmallContent(small.map(\.key).filter { roots[$0] == nil }))
      ordered.removeAll { arrived.contains($0.key) }
      withLock {
        connection.noteDownloaded(
          files: arrived.count,
          bytes: small.filter { arrived.contains($0.key) }.map(\.value).reduce(0, saturatingSum))
      }
    }
    // A page of many blobs is made durable with one flush, before its records are stored.
    let batch = ordered.count > 1
    for (hash, size) in ordered {
      let wait = try await fetchBlob(
        hash, durable: !batch, root: roots[hash],
        extraSources: fresh.filter { $0.content.blobHash == hash })
      withLock {
        if let wait {
          // Not at once again: the loop's next round tries it, after a second.
          noteMissing(hash, wait.reason, awaiting: wait.awaited, delay: 1000)
        }
        connection.noteDownloaded(files: 1, bytes: size)
      }
    }
    if batch { store.syncEverything() }
    return try withLock { () throws(SyncError) -> Bool in
      // `pause` may have returned while this page was on its way: it is then dropped, cursor
      // and all, so that nothing arrives after a pause.
      if connection.paused { return false }
      var durable: [SyncChange] = fresh.map { .addVersion($0.stored) }
      durable.append(.setMetadata(key: "cursor", value: Array(page.cursor.serialized.utf8)))
      try persist(durable)
      self.library.cursor = page.cursor
      let touched = updateState(library.learn(fresh))
      if !fresh.isEmpty {
        logger.info("pulled \(fresh.count) version(s)")
        logger.debug(
          "pulled versions of \(Set(fresh.map(\.path.description)).sorted().joined(separator: ", "))"
        )
      }
      reconcile(touched)
      tree?.conflictsChanged(at: touched)
      return true
    }
  }

  /// The records of a page that are new here and pass ``RecordCheck``, in page order; each
  /// refused one gets one log line (id, path, device, why) and is never stored, so the rest of
  /// the page applies and the cursor moves past it. Called with the lock held.
  ///
  /// Parents that arrive earlier in the same page count as known, as they will be once stored.
  func admit(_ arrived: [VersionRecord]) -> [VersionRecord] {
    let now = wallMilliseconds()
    var admitted: [VersionID: HLCTimestamp] = [:]
    var fresh: [VersionRecord] = []
    for record in arrived where !library.known.contains(record.id) && admitted[record.id] == nil {
      let problem = RecordCheck.problem(with: record, now: now) { id in
        admitted[id] ?? library.known[id]?.modified
      }
      if let problem {
        logger.error(
          """
          refused version \(record.id.hex) of \(RecordCheck.printable(record.path.bytes)) from \
          device \(RecordCheck.printable(record.deviceName.utf8, limit: 64)) \
          (\(record.deviceID)): \(problem)
          """)
        events.post(
          .refused(
            version: record.id.hex, path: String(decoding: record.path.bytes, as: UTF8.self),
            device: String(record.deviceName.prefix(64)), reason: "\(problem)"),
          time: now)
        continue
      }
      admitted[record.id] = record.modified
      fresh.append(record)
    }
    return fresh
  }

  /// The largest content that a pull brings into memory for the file that takes it (see
  /// ``ContentState/fetched``), where larger content streams into a blob file.
  static let smallContent: UInt64 = 64 << 10

  /// Fetches small content together (``Hub/smallBlobs(hashes:sizeLimit:)``), into
  /// ``ContentState/fetched``; returns the hashes that arrived. The rest take ``fetchBlob(_:durable:)``.
  func fetchSmallContent(_ hashes: [ContentHash]) async throws(SyncError) -> Set<ContentHash> {
    var arrived: Set<ContentHash> = []
    // A page at most: the hub reads each request in one transaction.
    for start in stride(from: 0, to: hashes.count, by: 512) {
      let part = hashes[start..<min(start + 512, hashes.count)]
      let bytes: [[UInt8]: [UInt8]]
      do {
        bytes = try await hub.smallBlobs(
          hashes: part.map(\.bytes), sizeLimit: Int(Self.smallContent))
      } catch {
        throw SyncError(error)
      }
      withLock {
        for hash in part {
          guard let content = bytes[hash.bytes] else { continue }
          contentState.hold(content, for: hash)
          arrived.insert(hash)
        }
      }
    }
    return arrived
  }

  /// Downloads a blob into the store, checking its hash on arrival; nil when it is here, else
  /// why it is not (the hub has been told, see ``reportToHub(_:arrivedDamaged:)``).
  /// `durable` as for ``ContentStore/install(_:as:durable:)``.
  ///
  /// Content that a version names as chunks (`root`, or any known version's) comes as chunks
  /// (``fetchChunked(_:root:extraSources:durable:)``), with `extraSources` as versions that
  /// share its chunks.
  func fetchBlob(
    _ hash: ContentHash, durable: Bool = true, root: ContentRoot? = nil,
    extraSources: [VersionRecord] = []
  ) async throws(SyncError) -> (
    reason: ContentWait, awaited: [UInt8]?
  )? {
    var root = root ?? withLock({ knownChunkRoot(of: hash) })
    if root == nil { root = try await twinRoots([hash])[hash] }
    if let root {
      let wait = try await fetchChunked(
        hash, root: root, extraSources: extraSources, durable: durable)
      // The same content may be on the hub as a blob (put by a recovery, or by a device that
      // moved it whole): taken from there rather than waited for.
      guard let wait, wait.reason == .missingOnHub,
        (try? await hub.hasBlob(hash: hash.bytes)) == true
      else { return wait }
    }
    let blob: IncomingBlob
    do throws(ContentError) {
      blob = try blobs.incoming()
    } catch {
      throw SyncError(error)
    }
    do {
      try await hub.fetchBlob(hash: hash.bytes, to: blob.descriptor)
    } catch .integrity(let reason) {
      logger.error("refused blob \(hash.hex) from the hub: \(reason)")
      return await reportToHub(hash, arrivedDamaged: true)
    } catch .missingBlob {
      return await reportToHub(hash, arrivedDamaged: false)
    } catch {
      throw SyncError(error)
    }
    // The hub checked the bytes against the hash as they arrived (Hub.fetchBlob's contract,
    // on this side of the network), so they are not read back a second time here, nor when
    // the blob becomes a working file while its file is as installed (a 1 GiB pull spent a
    // second on that second read).
    let fetched = UInt64(blob.size)
    withLock { contentState.received(fetched) }
    do throws(ContentError) {
      try blobs.install(blob, as: hash, durable: durable)
    } catch {
      throw SyncError(error)
    }
    if let file = blobs.openBlob(hash) { blobs.noteChecked(file, hash) }
    return nil
  }
}

/// `a + b`, or the largest value when that does not fit: progress counters that add sizes
/// other devices claim must not trap.
func saturatingSum(_ a: UInt64, _ b: UInt64) -> UInt64 {
  let (sum, overflow) = a.addingReportingOverflow(b)
  return overflow ? .max : sum
}
