import Crypto
import DocumentModel
import Glibc
import Hub
import LocalStore

extension SyncEngine {
  /// Writes the queued remote file versions (all of them, or those at `paths`) into the tree.
  /// Called without the lock: every copy, hash and fsync happens outside it and outside the
  /// tree's, which only sees a rename.
  func applyPending(only paths: Set<DocumentPath>? = nil) {
    while true {
      // Batches share one journal sync and one fsync per folder; big files go alone.
      let batch = withLock {
        applies.take(only: paths, maxFiles: Self.applyBatchFiles, maxBytes: Self.applyBatchBytes)
      }
      guard !batch.isEmpty else { break }
      execute(batch)
    }
    if paths == nil { keepFetchedContent() }
  }

  static let applyBatchBytes: UInt64 = 64 << 20
  /// Files per batch: a batch costs three flushes of the disk whatever its size (the content,
  /// the intents, the names), and four pages of small files (512 records each) land in one.
  static let applyBatchFiles = 2048

  /// Whether the remote changes waiting to land fill a batch, by files or by bytes, or the
  /// small content fetched for them (and for paths that wait for a writer, which only
  /// ``applyPending(only:)`` makes blobs) fills its memory. Called with the lock held.
  func applyIsDue() -> Bool {
    if applies.fillsBatch(maxFiles: Self.applyBatchFiles, maxBytes: Self.applyBatchBytes) {
      return true
    }
    return contentState.fetchedBytes >= Self.applyBatchBytes
  }

  /// Makes the fetched content that no file took (a conflict version's, or a path's that
  /// waits for its writer) a blob, with one flush for all, and lets go of it in memory.
  private func keepFetchedContent() {
    let left = withLock { contentState.takeFetched() }
    var added = false
    for (hash, bytes) in left where !blobs.contains(hash) {
      do {
        try blobs.add(bytes: bytes, as: hash, durable: false)
        added = true
      } catch {
        // Fetched again when something needs it.
        logger.error("cannot keep content \(hash.hex): \(error)")
      }
    }
    if added { store.syncEverything() }
  }

  /// Lands a batch: content into new working files (durable), then the intents (durable),
  /// then the names, the folders' fsync, and what each path shows, in one transaction.
  private func execute(_ batch: [FileApply]) {
    var ready: [(item: FileApply, incoming: Incoming)] = []
    var landed: [(item: FileApply, entry: LocalEntry?)] = []
    defer {
      // A set, not a search of `landed` for each item: a batch is a page of 512 files.
      let done = Set(landed.map(\.item.path))
      withLock {
        for item in batch {
          var landed = false
          if done.contains(item.path),
            case .document(let record)? = library.state.entries[item.path]
          {
            landed = record == item.target
          }
          applies.finish(item.path, landed: landed)
        }
      }
    }
    guard let tree = withLock({ self.tree }) else { return }
    // Many small files are made durable together with one flush, not one fsync each.
    let together = batch.count > 1
    // Content that two files of the batch take is copied for each, never moved to one.
    var takers: [ContentHash: Int] = [:]
    for item in batch { takers[item.hash, default: 0] += 1 }
    let (kept, inMemory) = withLock { () -> (Set<ContentHash>, [ContentHash: [UInt8]]) in
      var inMemory: [ContentHash: [UInt8]] = [:]
      for item in batch { inMemory[item.hash] = contentState.fetched[item.hash] }
      return (blobsThatMustStay(), inMemory)
    }
    for item in batch {
      let shared =
        takers[item.hash]! > 1 || Self.keepsBlob(item.path) || kept.contains(item.hash)
      let incoming =
        inMemory[item.hash].flatMap { write($0, for: item, durable: !together) }
        ?? prepare(item, durable: !together, shared: shared)
      if let incoming { ready.append((item, incoming)) }
    }
    // Written into the files that take it; what must also stay a blob stays in memory until
    // `keepFetchedContent` makes it one.
    let staying = kept.union(batch.filter { Self.keepsBlob($0.path) }.map(\.hash))
    withLock {
      for hash in inMemory.keys where !staying.contains(hash) { contentState.release(hash) }
    }
    guard !ready.isEmpty else { return }
    // The new working files, and the blobs' names (the pulled records that name them become
    // durable with the journal sync below), reach the disk first.
    if together {
      store.syncEverything()
    } else {
      store.syncBlobFolders(of: ready.map(\.item.hash.hex))
    }
    // A crash from here on leaves intents: the next start finishes or forgets each one, and
    // never takes the content it was writing for a local edit.
    do {
      try persist(
        ready.map {
          .beginApply(
            ApplyIntent(
              path: $0.item.path.bytes, versionID: $0.item.target.id.bytes,
              contentHash: $0.item.hash.bytes))
        })
    } catch {
      logger.error("cannot record remote changes before applying them: \(error)")
      for (_, incoming) in ready { discard(incoming) }
      return
    }
    store.syncJournal()
    var keptBlobs: [ContentHash] = []
    for (item, incoming) in ready {
      let wanted = withLock { () -> Bool in
        guard case .document(let record)? = library.state.entries[item.path] else { return false }
        return record == item.target
      }
      guard wanted else {
        discard(incoming)
        continue
      }
      let replaced = keepReplacedContent(at: item.path, for: item.hash)
      var expected = item.expected
      if replaced != nil, case .file(let inode, let size, let mtime, _, let executable)? = expected,
        case .file(inode, size, mtime, let ctime, executable)? = tree.entry(at: item.path)
      {
        // The second name changed only the file's change time.
        expected = .file(
          inode: inode, size: size, modificationTime: mtime, changeTime: ctime,
          executable: executable)
      }
      switch tree.apply(
        .file(path: item.path, incoming: incoming.name, executable: item.executable),
        expected: expected)
      {
      case .applied(let entry):
        landed.append((item, entry))
        if let replaced { keptBlobs += installReplaced(replaced) }
      case .skipped:
        discard(incoming)
        if let replaced { blobs.drop(replaced.kept) }
      }
    }
    if !keptBlobs.isEmpty { store.syncBlobFolders(of: keptBlobs.map(\.hex)) }
    // The new names must reach the disk before what the paths show is recorded, or a power
    // cut would bring the old content back under a record that says otherwise. One fsync per
    // folder after the whole batch: the first commits every rename of the batch at once.
    var renamed = ready.map(\.incoming.name)
    for case (_, .file(let inode, _, _, _, _)?) in landed {
      renamed.append(LocalStore.workingFileName(inode))
    }
    store.syncFolders(of: renamed)
    withLock {
      var changes: [SyncChange] = landed.map {
        .show(shownRecord($0.item.path, $0.item.target, $0.entry))
      }
      changes += ready.map { .endApply(path: $0.item.path.bytes) }
      do {
        try persist(changes)
      } catch {
        // The intents stay: the next start sees what the paths show.
        logger.error("cannot remember what remote changes show: \(error)")
        return
      }
      for (item, entry) in landed {
        library.shown[item.path] = shownRecord(item.path, item.target, entry)
      }
    }
  }

  /// When the version a path shows is about to be replaced, its content stays here
  /// (``keepsContent(ofDisplaced:at:)``) and only its clean working file holds it, a second
  /// name for that file kept aside by the content store, made before the replacing rename (no
  /// copy); nil otherwise.
  private func keepReplacedContent(at path: DocumentPath, for incoming: ContentHash) -> (
    kept: KeptAside, hash: ContentHash
  )? {
    let old = withLock { () -> (ContentHash, UInt64)? in
      guard let record = library.shown[path],
        let version = library.known[VersionID(digest(record.versionID))],
        case .file(let hash, _, _) = version.content, hash != incoming, !blobs.contains(hash),
        keepsContent(ofDisplaced: version, at: path),
        case .file(let inode, let size, let mtime, let ctime, _)? = tree?.entry(at: path),
        size == record.size, mtime == record.modificationTime, ctime == record.changeTime
      else { return nil }
      return (hash, inode)
    }
    guard let (hash, inode) = old, let kept = blobs.keepAside(workingFile: inode) else {
      return nil
    }
    return (kept, hash)
  }

  /// Makes the second name of a replaced file its blob, once its bytes are checked; the hashes
  /// kept.
  private func installReplaced(_ replaced: (kept: KeptAside, hash: ContentHash)) -> [ContentHash] {
    blobs.install(replaced.kept, as: replaced.hash) ? [replaced.hash] : []
  }

  /// Gives a new working file the content of a version, checked against its hash, with the
  /// version's time, made durable (here, or with its batch when `durable` is false); nil when
  /// it cannot (the content is damaged or not here: it is fetched again).
  ///
  /// A blob that nothing else needs (no conflict version, no version waiting to upload, no
  /// other file of the batch) becomes the working file itself, renamed, not copied: the
  /// document's content is then held once. Otherwise the content is copied, from the blob or
  /// from a clean working file that holds it.
  private func prepare(_ item: FileApply, durable: Bool, shared: Bool) -> Incoming? {
    if !shared, let moved = moveBlob(item, durable: durable) {
      return moved
    }
    guard let source = openContent(item.hash, preferring: item.path, anywhere: true) else {
      withLock { noteMissing(item.hash) }
      return nil
    }
    switch blobs.copyIntoNewWorkingFile(
      from: source, hash: item.hash, time: item.modificationTime, durable: durable)
    {
    case .made(let incoming):
      return incoming
    case .cannotWrite(let reason):
      logger.error("cannot write \(item.path): \(reason)")
    case .failedCopy(let reason):
      logger.error("cannot copy the content of \(item.path): \(reason)")
      if blobs.isBlobFile(source, item.hash), !blobs.verify(item.hash) {
        // The blob's file cannot be read (a failing disk), not the new file written: the hub's
        // copy is fetched over it, rather than this read failing again on every turn.
        withLock {
          if contentState.noteUnreadable(item.hash, retryAt: monotonicMilliseconds()) {
            changeLog.wake.signal()
          }
        }
      }
    case .otherBytes:
      // A blob that lies is dropped; a working file that changed since it was chosen is not.
      if blobs.holdsOtherBytes(item.hash) {
        logger.error("local blob \(item.hash.hex) does not match its hash; fetching it again")
        blobs.remove(item.hash)
        withLock { noteMissing(item.hash, .damagedHere) }
      } else {
        withLock { noteMissing(item.hash) }
      }
    }
    return nil
  }

  /// A new working file with `content`, fetched and checked against its hash on arrival
  /// (``ContentState/fetched``), and the version's time: one create and one write, made durable here
  /// or with its batch when `durable` is false; nil when it cannot be written.
  private func write(_ content: [UInt8], for item: FileApply, durable: Bool) -> Incoming? {
    do throws(ContentError) {
      return try blobs.writeNewWorkingFile(content, time: item.modificationTime, durable: durable)
    } catch {
      logger.error("cannot write \(item.path): \(error)")
      return nil
    }
  }

  /// Renames the blob of `item` into a new working file after checking it against its hash
  /// (unless it was checked as its file still is: just fetched); nil when there is no such
  /// blob, or it cannot be moved (then the content is copied).
  private func moveBlob(_ item: FileApply, durable: Bool) -> Incoming? {
    let outcome = blobs.moveBlobIntoNewWorkingFile(
      item.hash, time: item.modificationTime, durable: durable)
    switch outcome {
    case .moved(let incoming):
      return incoming
    case .damaged:
      logger.error("local blob \(item.hash.hex) does not match its hash; fetching it again")
      withLock { noteMissing(item.hash, .damagedHere) }
      return nil
    case .absent, .failed:
      return nil
    }
  }

  /// A working file that did not make it into the tree: a moved blob goes back to the blob
  /// folder (its content is still a version's), a copy is removed.
  private func discard(_ incoming: Incoming) {
    blobs.discard(incoming)
  }
}
