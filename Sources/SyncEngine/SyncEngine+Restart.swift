import DocumentModel
import Glibc
import Hub
import LocalStore

extension SyncEngine {
  /// What a start must settle before it looks for offline edits, outside the lock (it hashes):
  ///
  /// - a remote change that was being applied when the last run ended (an intent) is finished
  ///   when its path holds the content it was writing, and forgotten otherwise;
  /// - a file that differs from what its path last showed but holds the content and time of
  ///   that version, or of the path's current version (a change that landed but whose record
  ///   was lost), is not a local edit;
  /// - a file that holds the content and time of an older version of its path has gone back
  ///   in time (a power cut took back a rename or a write that had not reached the disk): it
  ///   is not a local edit either, and the path gets its current version again.
  ///
  /// Returns the paths that went back in time.
  func settleAfterRestart(_ tree: any LocalTree, intents: [ApplyIntent]) -> Set<DocumentPath> {
    for intent in intents {
      let path = DocumentPath(components: Self.components(intent.path))
      guard let version = withLock({ library.known[VersionID(digest(intent.versionID))] }),
        let entry = tree.entry(at: path), case .file(let inode, _, _, _, _) = entry,
        let (hash, _) = hashWorkingFile(inode), hash.bytes == intent.contentHash
      else { continue }
      withLock {
        if tree.entry(at: path) == entry, show(path, version, entry) {
          logger.info("finished applying \(path) after a restart")
        }
      }
    }
    if !intents.isEmpty {
      try? persist(intents.map { .endApply(path: $0.path) })
    }

    let changed = withLock { () -> [(DocumentPath, LocalEntry, UInt64)] in
      var result: [(DocumentPath, LocalEntry, UInt64)] = []
      for (path, record) in library.shown {
        guard let entry = tree.entry(at: path),
          case .file(let inode, let size, let mtime, let ctime, _) = entry,
          size != record.size || mtime != record.modificationTime || ctime != record.changeTime
        else { continue }
        result.append((path, entry, inode))
      }
      return result
    }
    var wentBack: Set<DocumentPath> = []
    for (path, entry, inode) in changed {
      guard let (hash, _) = hashWorkingFile(inode),
        case .file(_, _, let mtime, _, _) = entry
      else { continue }
      withLock {
        guard tree.entry(at: path) == entry, let record = library.shown[path],
          let showing = library.known[VersionID(digest(record.versionID))]
        else { return }
        var current: VersionRecord?
        if case .document(let winner)? = library.state.entries[path] { current = winner }
        for version in [showing, current].compactMap({ $0 })
        where version.content.blobHash == hash && version.contentTime == mtime {
          _ = show(path, version, entry)
          return
        }
        if let older = Self.olderVersion(of: showing, in: library.known, hash: hash, time: mtime) {
          logger.warning(
            """
            \(path) holds an older version (\(older.id.shortHex)) than it showed: not a local \
            edit; it gets its current version again
            """)
          wentBack.insert(path)
        }
      }
    }
    return wentBack
  }

  /// What an entry of the tree that no record says the path shows (or that the path showed
  /// deleted) is, by the path's current version.
  enum UnrecordedEntry: Equatable {
    /// The current version, landed: a remote change that needs no content copy (a folder, a
    /// symlink) takes its place in the tree, and the tree's commit queue may commit it, a
    /// moment before the engine records what the path shows; a crash in between leaves this.
    case landed(VersionRecord)
    /// The current version if the file's content is that version's (to hash, outside the lock).
    case landedIfSameContent(VersionRecord)
    /// New work of this device.
    case localEdit
  }

  /// A pure decision: whether `entry` holds what `current` (the path's current version) does.
  /// A folder is that folder whatever its times; a symlink needs the target and the time; a
  /// file, the size, time and mode, and then its content.
  static func unrecordedEntry(_ entry: LocalEntry, current: LibraryState.Entry?)
    -> UnrecordedEntry
  {
    switch (entry, current) {
    case (.directory, .directory(let record?)?):
      return .landed(record)
    case (.symlink(let target, let mtime), .document(let record)?):
      guard case .symlink(let hash, _) = record.content, hash == ContentHash(of: target),
        mtime == record.contentTime ?? Int64(record.modified.wallMilliseconds) * 1_000_000
      else { return .localEdit }
      return .landed(record)
    case (.file(_, let size, let mtime, _, let executable), .document(let record)?):
      guard case .file(_, let recordSize, let recordExecutable) = record.content,
        UInt64(clamping: size) == recordSize, executable == recordExecutable,
        mtime == record.contentTime
      else { return .localEdit }
      return .landedIfSameContent(record)
    default:
      return .localEdit
    }
  }

  /// A file the tree holds with no record of it that may be its path's current version.
  struct UnrecordedFile {
    var path: DocumentPath
    var entry: LocalEntry
    var inode: UInt64
    var current: VersionRecord
  }

  /// Hashes the files that may be their path's current version, landed without a record,
  /// outside the lock: each that is gets its record again, each other one is new local work.
  /// A file that holds the version is shown as holding it even if a newer one has come since:
  /// then it is an older version, which the tree is brought past like any other.
  func settleUnrecordedFiles(_ tree: any LocalTree, _ files: [UnrecordedFile]) {
    var landed: [DocumentPath: ShownRecord?] = [:]
    for file in files {
      let hash = hashWorkingFile(file.inode)?.0
      withLock {
        guard tree.entry(at: file.path) == file.entry, hash == file.current.content.blobHash
        else {
          changeLog.note(.create(file.path))
          return
        }
        landed[file.path] = shownRecord(file.path, file.current, file.entry)
      }
    }
    guard !landed.isEmpty else { return }
    withLock {
      logger.info(
        "\(landed.count) file(s) had landed without their record before the last run ended")
      showAgain(landed)
    }
  }

  /// Records what paths show (nil: nothing) in one transaction. Called with the lock held.
  func showAgain(_ records: [DocumentPath: ShownRecord?]) {
    do {
      try persist(
        records.map { path, record in record.map { .show($0) } ?? .unshow(path: path.bytes) })
    } catch {
      // Looked at again at the next start; until then the paths are compared with the hub's.
      logger.error("cannot remember what \(records.count) path(s) show: \(error)")
      return
    }
    for (path, record) in records { library.shown[path] = record }
  }

  /// An ancestor of `version` at its path with this content and time, if there is one.
  static func olderVersion(
    of version: VersionRecord, in known: VersionSet, hash: ContentHash, time: Int64
  ) -> VersionRecord? {
    var pending = version.parents
    var seen: Set<VersionID> = []
    while let id = pending.popLast(), seen.count < 1000 {
      guard seen.insert(id).inserted, let parent = known[id] else { continue }
      if parent.path == version.path && parent.content.blobHash == hash
        && parent.contentTime == time
      {
        return parent
      }
      pending += parent.parents
    }
    return nil
  }

  /// The hash and size of an inode's working file.
  func hashWorkingFile(_ inode: UInt64) -> (ContentHash, Int64)? {
    guard let (size, hash) = blobs.openWorkingFile(inode)?.digest() else { return nil }
    return (hash, size)
  }
}
