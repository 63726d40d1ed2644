import DocumentModel
import Glibc
import LocalStore

extension SyncEngine {
  /// Folds the pending local operations into versions, except those of paths still open for
  /// writing (a version is taken after the last writer closes): they, and whatever a rename
  /// ties to them, wait in the log. Called without the lock: changed files are hashed and
  /// copied into blobs outside it, so `.versions` and `docsync status` never wait on a copy.
  func recordWindow(force: Bool) {
    // `.docsyncignore` is read first, outside the lock: its patterns decide what else counts.
    // One that cannot be read now is left to the window, which holds it back.
    var early: [DocumentPath: (LocalEntry, VersionContent)] = [:]
    if changeLog.peekPaths().contains(IgnoreRules.filePath),
      let job = withLock({ hashJob(at: IgnoreRules.filePath) }),
      let content = try? hashFile(job)
    {
      early[IgnoreRules.filePath] = (job.entry, content)
    }
    guard var window = withLock({ beginWindow(early: early, force: force) }) else { return }
    var after = window.after
    var unreadable = window.unreadable
    var hashed: [String] = []
    // Many files (cp -r, tar x) are made durable together, with one flush, not two per file.
    let batch = window.toHash.count > 1
    // Their chunk lists are kept together too: one commit, not one a file.
    var lists: [(ContentHash, ChunkList)] = []
    for first in window.toHash {
      var job = first
      // A file replaced since the window looked is hashed as it is now, a few times at most.
      for attempt in 0..<3 {
        do {
          let content = try hashFile(job, durable: !batch) { lists.append(($0, $1)) }
          after[job.path] = content
          window.entries[job.path] = job.entry
          if let hash = content.blobHash { hashed.append(hash.hex) }
          break
        } catch {
          // Gone since the window looked: the path holds nothing now, and its removal waits in
          // the log. A background `git gc` unlinks thousands of loose objects while their
          // window is hashed; holding the window back for them made `docsync sync` fail.
          let now = withLock { tree?.entry(at: job.path) }
          guard let now else { break }
          // Replaced since (`git gc` renames a new `info/refs` over the old one while the
          // window hashes it): the path holds another file, whose content is the path's now.
          if attempt < 2, case .file(let inode, _, _, _, let executable) = now, inode != job.inode {
            job = HashJob(path: job.path, entry: now, inode: inode, executable: executable)
            continue
          }
          unreadable[job.path] = error.description
          break
        }
      }
    }
    // Before the records that name their roots are made (``chunkRoot(for:size:)``).
    keepChunkLists(lists, recorded: true)
    // The files, the blobs and their names reach the disk before any record that names them.
    // Also when the window waits: a blob already in the store is not written again, so the
    // next window's records would name these without making them durable.
    if batch {
      store.syncEverything()
    } else if !hashed.isEmpty {
      store.syncBlobFolders(of: hashed)
    }
    // A path left out of `after` would be recorded as deleted, on every device.
    if !unreadable.isEmpty {
      withLock { holdBack(window, unreadable: unreadable) }
      return
    }
    withLock { finishWindow(window, after: after) }
  }

  /// A file whose content must be hashed, as the tree showed it when the window closed.
  struct HashJob {
    var path: DocumentPath
    var entry: LocalEntry
    var inode: UInt64
    var executable: Bool
  }

  /// What a window found under the lock, for `finishWindow` once the changed files are hashed.
  struct Window {
    var operations: [LocalOperation]
    var coverage: Set<DocumentPath>
    var before: [DocumentPath: VersionRecord]
    var after: [DocumentPath: VersionContent]
    var entries: [DocumentPath: LocalEntry]
    var toHash: [HashJob]
    /// When the window began (monotonic milliseconds): a sync asked for while it ran, perhaps
    /// after the cause of a failure was mended, tries once more rather than hearing of it.
    var began: UInt64
    /// Paths whose content could not be read, and why.
    var unreadable: [DocumentPath: String] = [:]
  }

  /// Gives a window that could not read every path back to the change log, and notes when to
  /// try those paths again; the next window records the rest without them. Called with the
  /// lock held.
  private func holdBack(_ window: Window, unreadable: [DocumentPath: String]) {
    recorder.end(window.coverage)
    changeLog.restore(window.operations)
    let now = monotonicMilliseconds()
    for (path, reason) in unreadable.sorted(by: { $0.key < $1.key }) {
      let retry = recorder.failed(path, reason: reason, at: now, began: window.began)
      let wait = retry.delay < 1000 ? "\(retry.delay) ms" : "\(retry.delay / 1000) s"
      logger.error("cannot read \(path) to sync it: \(reason); trying again in \(wait)")
    }
    noteFailingChanged()
  }

  /// The file at `path` if its content must be hashed (it changed since the version it
  /// showed). Called with the lock held.
  private func hashJob(at path: DocumentPath) -> HashJob? {
    guard let entry = tree?.entry(at: path),
      case .file(let inode, let size, let mtime, let ctime, let executable) = entry
    else { return nil }
    if let record = library.shown[path],
      let version = library.known[VersionID(digest(record.versionID))],
      case .file = version.content, record.size == size,
      record.modificationTime == mtime, record.changeTime == ctime
    {
      // Unchanged: the file itself holds the content (``cleanWorkingFile(holding:preferring:)``).
      return nil
    }
    return HashJob(path: path, entry: entry, inode: inode, executable: executable)
  }

  /// Hashes a working file into a blob, outside the lock. The working file is made durable
  /// first (fsynced here, or with its batch when `durable` is false, before the window's
  /// records): a version must never name content that a power cut can take back from the
  /// file, or the older content would come back as a new local edit.
  ///
  /// The content's chunk list is kept, or handed to `collect` to keep with others.
  func hashFile(
    _ job: HashJob, durable: Bool = true, collect: ((ContentHash, ChunkList) -> Void)? = nil
  ) throws(SyncError) -> VersionContent {
    let (hash, copied, chunks): (ContentHash, Int64, ChunkList)
    do throws(ContentError) {
      (hash, copied, chunks) = try blobs.addWorkingFile(job.inode, durable: durable)
    } catch {
      throw SyncError(error)
    }
    if let collect {
      collect(hash, chunks)
    } else {
      keepChunkList(chunks, of: hash, recorded: true)
    }
    return .file(hash: hash, size: UInt64(copied), executable: job.executable)
  }

  /// The first part of a window, under the lock: takes the operations and finds what each
  /// touched path showed and shows now; files that changed are left to hash.
  private func beginWindow(early: [DocumentPath: (LocalEntry, VersionContent)], force: Bool)
    -> Window?
  {
    guard let tree else { return nil }
    let pendingPaths = changeLog.peekPaths()
    guard !pendingPaths.isEmpty else { return nil }
    // Editor litter that stays open as long as the editor (vim's swap file) holds nothing back.
    let open = pendingPaths.filter { !recorder.ignore.isIgnored($0) && tree.hasOpenWriter(at: $0) }
    // Empty but while a save cannot be read: a burst of thousands of creates looks up nothing.
    let now = monotonicMilliseconds()
    let retrying = recorder.heldBack(
      pendingPaths, at: now, syncAskedAt: force ? connection.syncRequestedAt : nil)
    let operations = changeLog.drain(holdingBack: open.union(retrying))
    guard !operations.isEmpty else { return nil }

    var coverage: Set<DocumentPath> = []
    // What each rename moves is found below it in an index, made once: a filter of every shown
    // path per rename made recording 10,000 renames take minutes.
    var shownIndex: PathIndex?
    for operation in operations {
      switch operation {
      case .create(let path), .write(let path), .remove(let path):
        coverage.insert(path)
      case .rename(let from, let to):
        if shownIndex == nil { shownIndex = PathIndex(library.shown.keys) }
        for folder in [from, to] {
          coverage.insert(folder)
          tree.forEachEntry(under: folder) { path, _ in coverage.insert(path) }
          coverage.formUnion(shownIndex!.paths(atOrBelow: folder))
        }
      }
    }
    coverage.remove(.root)

    var window = Window(
      operations: operations, coverage: coverage, before: [:], after: [:], entries: [:],
      toHash: [], began: now)
    for path in coverage {
      if let record = library.shown[path],
        let version = library.known[VersionID(digest(record.versionID))]
      {
        window.before[path] = version
      }
    }
    // `.docsyncignore` first: its new patterns already apply to the files saved with it.
    let ordered = coverage.sorted { $0 == IgnoreRules.filePath && $1 != IgnoreRules.filePath }
    var renamedToHash: [(HashJob, DocumentPath)] = []
    for path in ordered {
      guard !recorder.ignore.isIgnored(path), let entry = tree.entry(at: path) else {
        if path == IgnoreRules.filePath { adopt(.builtIn) }
        continue
      }
      window.entries[path] = entry
      if case .file = entry, let job = hashJob(at: path) {
        if let (seen, content) = early[path], seen == entry {
          window.after[path] = content
        } else if path == IgnoreRules.filePath {
          // Changed again since it was read a moment ago: a pattern file, read here.
          do {
            window.after[path] = try hashFile(job)
          } catch {
            window.unreadable[path] = error.description
          }
        } else if shownIndex != nil {
          // A window with renames: the file may be one that was only moved.
          renamedToHash.append((job, path))
          continue
        } else {
          window.toHash.append(job)
          continue
        }
      } else {
        do {
          if let content = try content(of: entry, at: path, previous: window.before[path]) {
            window.after[path] = content
          }
        } catch {
          window.unreadable[path] = error.description
        }
      }
      if path == IgnoreRules.filePath, case .file(let hash, _, _)? = window.after[path],
        let bytes = contentBytes(hash, preferring: path, locked: true)
      {
        adopt(IgnoreRules(fileContent: bytes))
      }
    }
    // Where each renamed file's document was when the window opened, traced as the coalescer
    // will trace it, once the tree has been read.
    if !renamedToHash.isEmpty {
      let origins = SaveCoalescer.origins(
        operations: operations, before: window.before, present: window.entries.keys)
      for (job, path) in renamedToHash {
        if let content = contentCarriedOver(job, from: origins[path] ?? nil, tree) {
          window.after[path] = content
        } else {
          window.toHash.append(job)
        }
      }
    }
    // Remote changes wait while these paths are being recorded.
    recorder.begin(coverage)
    return window
  }

  /// The content of a file that renames only moved since its origin showed it: the version's
  /// hash, without reading the file. A folder's rename leaves the files below it as they were;
  /// a file's own rename changes its ctime, which the tree tells apart from any other change
  /// (``LocalTree/changeTimeBeforeRenames(at:changeTime:)``). A file also written, truncated,
  /// chmodded or given other times since is hashed. Called with the lock held.
  private func contentCarriedOver(_ job: HashJob, from origin: DocumentPath?, _ tree: any LocalTree)
    -> VersionContent?
  {
    guard let origin, origin != job.path, let record = library.shown[origin],
      let version = library.known[VersionID(digest(record.versionID))],
      case .file(let hash, let size, _) = version.content,
      case .file(_, let nowSize, let mtime, let ctime, let executable) = job.entry,
      record.size == nowSize, record.modificationTime == mtime
    else { return nil }
    guard
      record.changeTime == ctime
        || tree.changeTimeBeforeRenames(at: job.path, changeTime: ctime) == record.changeTime
    else { return nil }
    // The new version names the chunk root hashing would have given it (`chunkRoot(for:)`
    // finds the list kept then); content without a kept list is read, which keeps one.
    if objectStore != nil && chunkRoot(for: hash, size: size) == nil { return nil }
    return .file(hash: hash, size: size, executable: executable)
  }

  /// The second part of a window, under the lock: the versions of what the window changed.
  private func finishWindow(_ window: Window, after: [DocumentPath: VersionContent]) {
    defer { recorder.end(window.coverage) }
    guard let tree else { return }
    let operations = window.operations
    let coverage = window.coverage
    let before = window.before
    let entries = window.entries

    var changes: [PendingChange] = []
    for change in SaveCoalescer.changes(
      operations: operations, before: before, after: after, rules: recorder.ignore)
    {
      // Writing a conflict version's content over its document (cp, cat >) chooses it.
      if let hash = change.content.blobHash,
        let chosen = library.state.conflicts[change.path]?.first(where: {
          $0.content.blobHash == hash
        })
      {
        let resolution = Resolution.choose(chosen.id).changes(
          in: library.known, state: library.state)
        if !resolution.isEmpty {
          changes += resolution
          continue
        }
      }
      // Writing the exact bytes of `.versions/<path>/merged<ext>` over the document resolves
      // every conflict version of it: the merge follows all the heads it was made from.
      if let hash = change.content.blobHash, library.state.conflicts[change.path] != nil {
        let heads = library.known.heads(at: change.path).map(\.id)
        if merges.choosesMergedView(at: change.path, hash: hash, heads: heads) {
          changes.append(
            PendingChange(
              path: change.path, content: change.content, parents: heads,
              contentTime: change.contentTime))
          continue
        }
      }
      changes.append(change)
    }

    // A file whose content stayed but whose mtime changed (touch, cp -p of the same bytes)
    // is a new version too, so that every device shows the same time.
    let changedPaths = Set(changes.map(\.path))
    // Found first, then sorted: sorting all of a large window's coverage cost seconds.
    let retimed = coverage.filter { path in
      guard !changedPaths.contains(path), let previous = before[path],
        let content = after[path], content == previous.content,
        let time = fileTime(entries[path])
      else { return false }
      return time != previous.contentTime
    }
    for path in retimed.sorted() {
      guard let previous = before[path], let content = after[path] else { continue }
      changes.append(PendingChange(path: path, content: content, parents: [previous.id]))
    }
    // Each file carries its own mtime; the clock orders versions and only moves forward, so
    // it must not stand for a file's time (a past mtime from tar or cp -p would be lost).
    changes = changes.map { change in
      guard change.content.blobHash != nil, let time = fileTime(entries[change.path]) else {
        return change
      }
      return change.with(contentTime: time)
    }
    let records = library.author.record(
      changes, known: library.known, now: wallMilliseconds(), chunks: chunkRoot(for:size:))

    var durable: [SyncChange] = []
    for record in records {
      durable.append(.addVersion(record.stored))
      durable.append(.enqueue(id: record.id.bytes))
    }
    let recorded = Dictionary(records.map { ($0.path, $0) }, uniquingKeysWith: { _, last in last })
    var newShown: [DocumentPath: ShownRecord?] = [:]
    for path in coverage where !recorder.ignore.isIgnored(path) {
      if let record = recorded[path] {
        newShown[path] = shownRecord(path, record, entries[path])
      } else if let previous = before[path], let entry = entries[path],
        after[path] == previous.content
      {
        // Touched, same content: remember the new times so the file is not hashed again.
        newShown[path] = shownRecord(path, previous, entry)
      }
    }
    for (path, record) in newShown {
      if let record {
        durable.append(.show(record))
      } else {
        durable.append(.unshow(path: path.bytes))
      }
    }
    do {
      try persist(durable)
    } catch {
      logger.error("cannot record local changes: \(error)")
      changeLog.restore(operations)
      return
    }
    if recorder.recorded(coverage) { noteFailingChanged() }
    for (path, record) in newShown { library.shown[path] = record }
    let touched = updateState(library.queue(records))
    if !records.isEmpty {
      logger.debug(
        "recorded \(records.count) local version(s): \(records.map(\.path.description).sorted().joined(separator: ", "))"
      )
    }
    // A concurrent remote version may win a path this window touched: show the winner.
    reconcile(touched)
    tree.conflictsChanged(at: touched)
  }

  /// The mtime that a version of this entry carries: files' and symlinks'.
  private func fileTime(_ entry: LocalEntry?) -> Int64? {
    switch entry {
    case .file(_, _, let mtime, _, _)?, .symlink(_, let mtime)?: mtime
    default: nil
    }
  }

  func shownRecord(_ path: DocumentPath, _ record: VersionRecord, _ entry: LocalEntry?)
    -> ShownRecord
  {
    if case .file(_, let size, let mtime, let ctime, _) = entry {
      return ShownRecord(
        path: path.bytes, versionID: record.id.bytes, size: size, modificationTime: mtime,
        changeTime: ctime)
    }
    return ShownRecord(
      path: path.bytes, versionID: record.id.bytes, size: -1, modificationTime: 0, changeTime: 0)
  }

  /// The version content of what a path holds, hashing a file only when it changed since the
  /// version it showed.
  private func content(of entry: LocalEntry, at path: DocumentPath, previous: VersionRecord?)
    throws(SyncError) -> VersionContent?
  {
    switch entry {
    case .file(_, let size, let mtime, let ctime, let executable):
      if let previous, case .file(let hash, let oldSize, _) = previous.content,
        let record = library.shown[path], record.size == size, record.modificationTime == mtime,
        record.changeTime == ctime
      {
        return .file(hash: hash, size: oldSize, executable: executable)
      }
      // Changed files are hashed outside the lock (`hashFile`).
      return nil
    case .directory:
      return .directory
    case .symlink(let target, _):
      let hash: ContentHash
      do throws(ContentError) {
        hash = try blobs.add(bytes: target)
      } catch {
        throw SyncError(error)
      }
      return .symlink(hash: hash, size: UInt64(target.count))
    case .special:
      return nil
    }
  }

  /// Brings the tree to the current state at `paths`; a path that is being edited or whose
  /// content is not here yet waits in `deferred`. Called with the lock held.
  func reconcile(_ paths: some Sequence<DocumentPath>) {
    guard let tree else { return }
    let busy = changeLog.peekPaths()
    let creations = paths.filter { library.state.entries[$0] != nil }.sorted {
      $0.components.count < $1.components.count
    }
    let removals = paths.filter { library.state.entries[$0] == nil }.sorted {
      $0.components.count > $1.components.count
    }
    for path in creations + removals where !path.isRoot && !recorder.ignore.isIgnored(path) {
      if busy.contains(path) || recorder.isRecording(path) || applies.isApplying(path)
        || tree.hasOpenWriter(at: path)
      {
        applies.postpone(path)
        continue
      }
      applies.settle(path)
      if !bringUpToDate(path, tree) { applies.postpone(path) }
    }
  }

  /// Returns false when the path must be tried again later.
  private func bringUpToDate(_ path: DocumentPath, _ tree: any LocalTree) -> Bool {
    let local = tree.entry(at: path)
    // A local change made since `reconcile` looked at what is pending (an `rm -rf` while the
    // first turn after a mount walks every path) is newer than what this would bring back:
    // the path waits for its window. Asked after the entry is read, so the change that entry
    // shows is known here.
    if changeLog.isPending(path) { return false }
    let previous = library.shown[path]
    let previousVersion = previous.flatMap { library.known[VersionID(digest($0.versionID))] }
    let change: RemoteChange
    let target: VersionRecord?
    switch library.state.entries[path] {
    case .document(let record):
      target = record
      if previous?.versionID == record.id.bytes, matches(local, previous, record) { return true }
      if let previousVersion, previousVersion.content == record.content,
        previousVersion.contentTime == record.contentTime,
        matches(local, previous, previousVersion)
      {
        return show(path, record, local)
      }
      guard let hash = record.content.blobHash else { return false }
      guard contentState.isHeld(hash) || holdsContent(hash, preferring: path) else {
        noteMissing(hash)
        return false
      }
      if record.kind == .symlink {
        guard let target = contentBytes(hash, preferring: path, locked: true) else {
          blobs.remove(hash)
          noteMissing(hash)
          return false
        }
        let time = record.contentTime ?? Int64(record.modified.wallMilliseconds) * 1_000_000
        if local == .symlink(target: target, modificationTime: time) {
          return show(path, record, local)
        }
        change = .symlink(path: path, target: target, modificationTime: time)
      } else {
        guard case .file(_, let size, let executable) = record.content else { return true }
        // The content is copied (and checked against its hash) outside every lock; the path
        // stays deferred until it lands (`applyPending`).
        applies.queue(
          FileApply(
            path: path, expected: local, target: record, hash: hash, size: size,
            executable: executable,
            modificationTime: record.contentTime
              ?? Int64(record.modified.wallMilliseconds) * 1_000_000))
        return false
      }
    case .directory(let record):
      target = record
      if local == .directory {
        if let record, previous?.versionID != record.id.bytes { return show(path, record, local) }
        return true
      }
      change = .directory(path: path)
    case nil:
      guard let local else {
        if let winner = library.known.pathState(at: path)?.winner,
          previous?.versionID != winner.id.bytes
        {
          return show(path, winner, nil)
        }
        return true
      }
      // A local path the engine never showed is new work of this device: leave it alone.
      guard previous != nil, let previousVersion, !previousVersion.content.isDeletion,
        matches(local, previous, previousVersion)
      else { return true }
      target = library.known.pathState(at: path)?.winner
      change = .remove(path: path)
    }
    let expected = keepDisplacedContent(
      at: path, local: local, shown: previous, version: previousVersion)
    switch tree.apply(change, expected: expected) {
    case .skipped:
      return false
    case .applied(let entry):
      if let target { return show(path, target, entry) }
      library.shown[path] = nil
      try? persist([.unshow(path: path.bytes)])
      return true
    }
  }

  func matches(_ local: LocalEntry?, _ record: ShownRecord?, _ version: VersionRecord)
    -> Bool
  {
    switch (local, version.kind) {
    case (.file(_, let size, let mtime, let ctime, _)?, .file):
      guard let record else { return false }
      return record.size == size && record.modificationTime == mtime && record.changeTime == ctime
    case (.directory?, .directory): return true
    case (.symlink?, .symlink): return true
    case (nil, .deletion): return true
    default: return false
    }
  }

  func show(_ path: DocumentPath, _ record: VersionRecord, _ entry: LocalEntry?) -> Bool {
    let shownRecord = shownRecord(path, record, entry)
    do {
      try persist([.show(shownRecord)])
    } catch {
      logger.error("cannot remember what \(path) shows: \(error)")
      return false
    }
    library.shown[path] = shownRecord
    return true
  }
}
