import Foundation
import GRDB
import Glibc
import Synchronization

/// One device's durable state: the local tree in SQLite and the working files that back the mount.
///
/// The store persists; it does not decide. `DocumentFileSystem` keeps the live tree in memory and
/// sends each operation's changes here to commit together (grouped with other operations', see
/// ``CommitQueue``), so a crash never leaves half an operation.
public final class LocalStore: @unchecked Sendable {
  /// The state folder.
  public let directory: String
  /// An open descriptor of the working-file folder, for `openat` and friends.
  public let workingFiles: Int32

  /// The database, reached through ``StateDatabase`` so that every write commits the tree's
  /// queued changes first.
  let database: StateDatabase
  private let journal: Int32
  /// Flushes `journal` beside a working file's fsync; nil when the journal could not be opened.
  private let journalSync: JournalSync?
  /// Lets a working file's fsync flush the journal too, where that is safe; nil elsewhere.
  let sharedFlush: SharedFlush?
  let commits = CommitQueue()
  /// Empty working files made ahead of the creates that take them.
  private let workingFilePool: WorkingFilePool
  /// The one owner of this state's content: blobs, and the working files' content.
  public let content: ContentStore
  /// Files open for writing on the mount and not yet closed (``writerOpened()``).
  private let openWriters = Atomic<Int>(0)
  /// Set by ``shutdown()``.
  private let isShutDown = Atomic<Bool>(false)

  /// Opens (creating when missing) the state in `directory`.
  public init(directory: String) throws(LocalStoreError) {
    self.directory = directory
    let filesPath = directory + "/files"
    for path in [directory, filesPath, filesPath + "/" + Self.incomingFolder] {
      if mkdir(path, 0o700) != 0 && errno != EEXIST {
        throw .unusable(path, String(cString: strerror(errno)))
      }
    }
    // 256 subfolders keep each folder small when a library has many files.
    for shard in 0..<256 {
      let path = filesPath + "/" + Self.shardName(UInt64(shard))
      if mkdir(path, 0o700) != 0 && errno != EEXIST {
        throw .unusable(path, String(cString: strerror(errno)))
      }
    }
    let fd = open(filesPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { throw .unusable(filesPath, String(cString: strerror(errno))) }
    workingFiles = fd
    workingFilePool = WorkingFilePool(workingFiles: fd)
    content = ContentStore(directory: directory, workingFiles: fd, pool: workingFilePool)

    var configuration = Configuration()
    // Another connection (`sqlite3` left open on a stopped mount's state) may hold the lock
    // for a moment as the store opens: wait for it rather than fail the mount.
    configuration.busyMode = .timeout(10)
    configuration.prepareDatabase { db in
      // The mount is the database's one user (the state folder's lock keeps a second mount
      // out), so its connection keeps the file's lock from its first transaction to its
      // close: no `fcntl` locks taken and dropped around every commit, and the WAL's index
      // in memory rather than in a shared `-shm` file. It must come before the first access
      // to the file, which WAL mode's would make shared. Others read the state once the
      // mount stops.
      try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
      // WAL with synchronous=NORMAL: a committed transaction survives a crash of this process
      // (kill -9) without an fsync per commit, which the tree's lock would wait on; the
      // commits that must survive power loss are followed by `syncJournal`: an intent before
      // a remote change takes a file's name, and the records before they go to the hub.
      // What the tree records may lag after a power cut; the start settles that from the
      // files themselves (a file that went back to an older version is not a local edit).
      // Before WAL mode writes the header: only a new, empty file takes it, and then gives
      // pruned space back by incremental vacuum from the start (see `reclaimSpace`).
      try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
      try db.execute(sql: "PRAGMA journal_mode = WAL")
      try db.execute(sql: "PRAGMA synchronous = NORMAL")
    }
    do {
      let queue = try DatabaseQueue(
        path: directory + "/state.sqlite", configuration: configuration)
      // SQLite reads a damaged B-tree without a word as often as it fails on it: a page out of
      // order hid a document from the tree, and the engine then recorded its deletion for
      // every device. The check reads every page once (0.13 s for 200 MB of state, 1.5 s
      // from a cold disk) before anything is loaded from them.
      let problems = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
      if problems != ["ok"] {
        try? queue.close()
        throw LocalStoreError.damaged(
          directory + "/state.sqlite",
          problems.joined(separator: "\n").split(separator: "\n")
            .filter { !$0.hasPrefix("*** ") }.prefix(2).joined(separator: "; "))
      }
      try Self.migrator.migrate(queue)
      database = StateDatabase(queue: queue, commits: commits, workingFiles: fd)
    } catch {
      close(fd)
      switch error {
      case let error as LocalStoreError:
        throw error
      case let error as DatabaseError
      where Self.meansDamage(error) || Self.headerIsDamaged(error, directory + "/state.sqlite"):
        throw .damaged(directory + "/state.sqlite", error.message ?? "\(error)")
      default:
        throw .unusable(directory + "/state.sqlite", "\(error)")
      }
    }
    journal = open(directory + "/state.sqlite-wal", O_RDONLY | O_CLOEXEC)
    journalSync = journal >= 0 ? JournalSync(descriptor: journal) : nil
    sharedFlush = SharedFlush.make(journal: journal, workingFiles: fd)
    commits.startCommitting { [weak self] eager in
      guard let self else { return false }
      let removals = try? self.database.commitQueued {
        if self.journal >= 0,
          Self.startsJournalWrite(
            eager: eager, filesOpenForWriting: self.filesOpenForWriting,
            morePending: self.commits.hasPending)
        {
          Writeback.start(self.journal)
        }
      }
      if let removals, !self.workingFilePool.remove(removals) {
        self.database.removeWorkingFiles(removals)
      }
      return true
    }
  }

  deinit {
    shutdown()
    close(workingFiles)
    if journal >= 0 { close(journal) }
  }

  /// Commits what is queued, stops the store's threads and closes the state database, which
  /// its connection otherwise holds for as long as the store lives: for the end of a mount,
  /// so that the next opener (the next mount in the same process, `sqlite3`) finds it free.
  /// Every later use of the database fails.
  public func shutdown() {
    guard !isShutDown.exchange(true, ordering: .acquiringAndReleasing) else { return }
    _ = try? database.write { _ in }
    commits.stop()
    workingFilePool.stop()
    journalSync?.stop()
    database.close()
  }

  /// Starts making empty working files ahead of the inodes numbered from `inode` on, for
  /// ``takePreparedWorkingFile(_:)``.
  public func prepareWorkingFiles(from inode: UInt64) {
    workingFilePool.start(from: inode)
  }

  /// Notes a file opened for writing on the mount, whose `fsync` may follow; each call is
  /// matched by one ``writerClosed()`` at its first close. A hint only: an `fsync` that
  /// comes without it writes the journal's pages itself.
  public func writerOpened() {
    openWriters.add(1, ordering: .relaxed)
  }

  /// Notes the first close of a file that ``writerOpened()`` noted.
  public func writerClosed() {
    openWriters.subtract(1, ordering: .relaxed)
  }

  /// How many files ``writerOpened()`` noted that have not closed yet.
  public var filesOpenForWriting: Int { openWriters.load(ordering: .relaxed) }

  /// Whether the commit queue's thread starts the journal's new pages on their way to the disk
  /// after a commit. An `fsync` is expected (`eager`): its wait for the pages is shorter when
  /// they are on their way already. With no file open for writing, the next `fsync` comes after
  /// an open, and with more changes queued, their commit follows at once: either way a later
  /// commit starts these pages with its own in one write to the disk. `strace` of atomic saves
  /// had shown a save's rename committed just after the next save's create had opened its
  /// file, and the journal's pages going to the disk in two writes a save, not one.
  static func startsJournalWrite(eager: Bool, filesOpenForWriting: Int, morePending: Bool)
    -> Bool
  {
    eager && filesOpenForWriting > 0 && !morePending
  }

  /// The open, empty working file of a new inode, made ahead of time, or nil when none is
  /// ready (the caller creates it). Numbers below `inode` are not asked for again.
  public func takePreparedWorkingFile(_ inode: UInt64) -> Int32? {
    workingFilePool.take(inode)
  }

  /// The working file of an inode, relative to `workingFiles`.
  ///
  /// Built in place: every lookup, getattr and open of a file names its working file, and
  /// the name (at most 23 bytes) fits a small string that needs no allocation.
  public static func workingFileName(_ inode: UInt64) -> String {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
      buffer[0] = hexDigit(inode >> 4)
      buffer[1] = hexDigit(inode)
      buffer[2] = UInt8(ascii: "/")
      var count = 3
      var rest = inode
      repeat {
        buffer[count] = UInt8(ascii: "0") + UInt8(rest % 10)
        rest /= 10
        count += 1
      } while rest > 0
      var low = 3
      var high = count - 1
      while low < high {
        buffer.swapAt(low, high)
        low += 1
        high -= 1
      }
      return String(decoding: UnsafeMutableBufferPointer(rebasing: buffer[..<count]), as: UTF8.self)
    }
  }

  static func shardName(_ inode: UInt64) -> String {
    String(decoding: [hexDigit(inode >> 4), hexDigit(inode)], as: UTF8.self)
  }

  /// The lowest four bits of `value` as a lowercase hexadecimal digit.
  private static func hexDigit(_ value: UInt64) -> UInt8 {
    let digit = UInt8(value & 0xf)
    return digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
  }

  private static var migrator: DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v1: inodes, entries, extended attributes") { db in
      try db.execute(
        sql: """
          CREATE TABLE inodes (
            ino INTEGER PRIMARY KEY,
            mode INTEGER NOT NULL,
            uid INTEGER NOT NULL,
            gid INTEGER NOT NULL,
            rdev INTEGER NOT NULL,
            atime INTEGER NOT NULL,
            mtime INTEGER NOT NULL,
            ctime INTEGER NOT NULL,
            target BLOB
          );
          CREATE TABLE entries (
            parent INTEGER NOT NULL,
            name BLOB NOT NULL,
            ino INTEGER NOT NULL,
            PRIMARY KEY (parent, name)
          ) WITHOUT ROWID;
          CREATE INDEX entries_by_inode ON entries(ino);
          CREATE TABLE xattrs (
            ino INTEGER NOT NULL,
            name BLOB NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY (ino, name)
          ) WITHOUT ROWID;
          CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
          """)
    }
    migrator.registerMigration("v2: versions, outbox, shown versions, sync metadata") { db in
      try db.execute(
        sql: """
          CREATE TABLE versions (id BLOB PRIMARY KEY, payload BLOB NOT NULL) WITHOUT ROWID;
          CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, id BLOB NOT NULL UNIQUE);
          CREATE TABLE shown (
            path BLOB PRIMARY KEY,
            id BLOB NOT NULL,
            size INTEGER NOT NULL,
            mtime INTEGER NOT NULL,
            ctime INTEGER NOT NULL
          ) WITHOUT ROWID;
          CREATE TABLE sync_meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
          """)
    }
    migrator.registerMigration("v3: remote changes being applied") { db in
      try db.execute(
        sql: """
          CREATE TABLE applying (
            path BLOB PRIMARY KEY,
            id BLOB NOT NULL,
            hash BLOB NOT NULL
          ) WITHOUT ROWID;
          """)
    }
    migrator.registerMigration("v4: history released by retention") { db in
      // Versions whose content retention let go. Their records stay in `versions`: they carry
      // the ancestry that tells heads apart.
      try db.execute(sql: "CREATE TABLE released (id BLOB PRIMARY KEY) WITHOUT ROWID")
    }
    migrator.registerMigration("v5: indexes that let records stay on disk") { db in
      // The engine keeps only the heads of each path in memory and reads older records here
      // (`StoredVersion`). Rows stored before this step have no path yet: the engine decodes
      // them once and fills the columns (`indexVersions`), then `finishIndexing` derives the
      // heads and the paths with history; `records_indexed` says that has been done.
      try db.execute(
        sql: """
          ALTER TABLE versions ADD COLUMN path BLOB;
          ALTER TABLE versions ADD COLUMN document INTEGER NOT NULL DEFAULT 0;
          ALTER TABLE versions ADD COLUMN hash BLOB;
          CREATE INDEX versions_by_path ON versions(path);
          CREATE INDEX versions_by_hash ON versions(hash) WHERE hash IS NOT NULL;
          CREATE TABLE version_parents (
            parent BLOB NOT NULL,
            child BLOB NOT NULL,
            PRIMARY KEY (parent, child)
          ) WITHOUT ROWID;
          CREATE TABLE heads (id BLOB PRIMARY KEY) WITHOUT ROWID;
          CREATE TABLE history_paths (path BLOB PRIMARY KEY) WITHOUT ROWID;
          INSERT INTO sync_meta (key, value)
            SELECT 'records_indexed', X'01' WHERE NOT EXISTS (SELECT 1 FROM versions);
          """)
    }
    migrator.registerMigration("v6: no index of entries by inode") { db in
      // Nothing reads entries by inode (the tree is loaded whole and kept in memory), and the
      // index cost a page in the journal for every create, rename and unlink: a save's two
      // commits wrote 9 pages where its changes need 4.
      try db.execute(sql: "DROP INDEX IF EXISTS entries_by_inode")
    }
    migrator.registerMigration("v7: chunk lists of content") { db in
      // A cache, rebuilt from the content when missing or wrong: no version depends on a row.
      try db.execute(
        sql: """
          CREATE TABLE content_chunks (
            hash BLOB PRIMARY KEY, root BLOB NOT NULL, entries BLOB NOT NULL
          ) WITHOUT ROWID;
          """)
    }
    migrator.registerMigration("v8: pull every record once more") { db in
      // An earlier docsync refused the records it could not read (chunked ones, as malformed)
      // and its cursor went past them: without this, an upgraded device would never see those
      // versions. Records it knows are passed over as they arrive; only the page reads cost.
      try db.execute(sql: "DELETE FROM sync_meta WHERE key = 'cursor'")
    }
    migrator.registerMigration("v9: chunks present in partial working files") { db in
      // Files on demand: a row per working file that holds part of its content. Nothing
      // writes it yet; a docsync of before this step never makes partial files.
      try db.execute(
        sql: """
          CREATE TABLE partial_content (
            ino INTEGER PRIMARY KEY,
            hash BLOB NOT NULL,
            root BLOB NOT NULL,
            presence BLOB NOT NULL,
            size INTEGER NOT NULL,
            file_ino INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            ctime_ns INTEGER NOT NULL
          );
          """)
    }
    return migrator
  }

  /// Everything the store holds, to rebuild the live tree at mount.
  public func load() throws(LocalStoreError) -> Snapshot {
    var inodes: [InodeRecord] = []
    var entries: [EntryRecord] = []
    var snapshot = try load(eachInode: { inodes.append($0) }, eachEntry: { entries.append($0) })
    snapshot.inodes = inodes
    snapshot.entries = entries
    return snapshot
  }

  /// Loads the tree as `load()` does, but hands over the inodes, then the entries, one row at a
  /// time rather than in the snapshot: a large tree's rows are then never all in memory beside
  /// what the file system makes of them.
  public func load(eachInode: (InodeRecord) -> Void, eachEntry: (EntryRecord) -> Void)
    throws(LocalStoreError) -> Snapshot
  {
    try flush()
    do {
      return try database.read { db in
        var snapshot = Snapshot()
        let inodes = try Row.fetchCursor(db, sql: "SELECT * FROM inodes")
        while let row = try inodes.next() {
          let target: Data? = row["target"]
          eachInode(
            InodeRecord(
              inode: UInt64(row["ino"] as Int64), mode: UInt32(row["mode"] as Int64),
              uid: UInt32(row["uid"] as Int64), gid: UInt32(row["gid"] as Int64),
              rdev: UInt64(row["rdev"] as Int64), accessTime: row["atime"],
              modificationTime: row["mtime"], changeTime: row["ctime"],
              target: target.map { [UInt8]($0) }))
        }
        let entries = try Row.fetchCursor(db, sql: "SELECT parent, name, ino FROM entries")
        while let row = try entries.next() {
          eachEntry(
            EntryRecord(
              parent: UInt64(row[0] as Int64), name: [UInt8](row[1] as Data),
              inode: UInt64(row[2] as Int64)))
        }
        let attributes = try Row.fetchCursor(db, sql: "SELECT ino, name, value FROM xattrs")
        while let row = try attributes.next() {
          snapshot.extendedAttributes.append(
            ExtendedAttributeRecord(
              inode: UInt64(row[0] as Int64), name: [UInt8](row[1] as Data),
              value: [UInt8](row[2] as Data)))
        }
        snapshot.nextInode =
          try UInt64(
            Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'next_inode'") ?? 0)
        return snapshot
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// Why the state database cannot be written (a full disk), and when that was last found
  /// (CLOCK_MONOTONIC milliseconds); nil once a write succeeds again.
  public var writeFailure: (reason: String, at: UInt64)? {
    commits.failure.map { ($0.reason, UInt64(max($0.at, 0) / 1_000_000)) }
  }

  /// Queues one operation's changes, to be committed all together or not at all, in order,
  /// grouped with others (see ``CommitQueue``); ``flush()`` commits them now. While commits
  /// fail (a full disk), each call first tries to commit what waits and fails as it does.
  public func apply(_ changes: [Change]) throws(LocalStoreError) {
    if commits.failure != nil { try flush() }
    commits.add(changes)
  }

  /// Removes an inode's working file once the changes queued so far are committed.
  public func removeWorkingFile(_ inode: UInt64) {
    commits.addRemoval(inode)
  }

  /// Commits every queued change now.
  public func flush() throws(LocalStoreError) {
    do {
      try database.write { _ in }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// Writes tree changes in the caller's transaction.
  static func execute(_ changes: [Change], in db: Database) throws {
    for change in changes {
      switch change {
      case .putInode(let r):
        try db.cachedStatement(
          sql: """
            INSERT OR REPLACE INTO inodes (ino, mode, uid, gid, rdev, atime, mtime, ctime, target)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).execute(arguments: [
          Int64(r.inode), Int64(r.mode), Int64(r.uid), Int64(r.gid), Int64(bitPattern: r.rdev),
          r.accessTime, r.modificationTime, r.changeTime, r.target.map { Data($0) },
        ])
      case .deleteInode(let inode):
        try db.cachedStatement(sql: "DELETE FROM inodes WHERE ino = ?").execute(arguments: [
          Int64(inode)
        ])
        try db.cachedStatement(sql: "DELETE FROM xattrs WHERE ino = ?").execute(arguments: [
          Int64(inode)
        ])
      case .putEntry(let e):
        try db.cachedStatement(
          sql: "INSERT OR REPLACE INTO entries (parent, name, ino) VALUES (?, ?, ?)"
        ).execute(arguments: [Int64(e.parent), Data(e.name), Int64(e.inode)])
      case .deleteEntry(let parent, let name):
        try db.cachedStatement(sql: "DELETE FROM entries WHERE parent = ? AND name = ?")
          .execute(arguments: [Int64(parent), Data(name)])
      case .putExtendedAttribute(let x):
        try db.cachedStatement(
          sql: "INSERT OR REPLACE INTO xattrs (ino, name, value) VALUES (?, ?, ?)"
        ).execute(arguments: [Int64(x.inode), Data(x.name), Data(x.value)])
      case .deleteExtendedAttribute(let inode, let name):
        try db.cachedStatement(sql: "DELETE FROM xattrs WHERE ino = ? AND name = ?")
          .execute(arguments: [Int64(inode), Data(name)])
      case .setNextInode(let next):
        try db.cachedStatement(
          sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('next_inode', ?)"
        ).execute(arguments: [Int64(next)])
      }
    }
  }

  /// Makes every committed transaction durable against power loss, not only against a crash.
  public func syncJournal() {
    _ = try? flush()
    if journal >= 0 {
      let measured = sharedFlush?.measure()
      if fdatasync(journal) == 0, let measured { sharedFlush?.noteSynced(measured) }
    } else {
      _ = try? database.writeWithoutTransaction { db in
        try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)")
      }
    }
  }

  /// Commits every queued change, then runs `work` (a working file's fsync or fdatasync) while
  /// the journal is flushed on another thread, and returns once both are done: what
  /// ``syncJournal()`` promises. Where the journal's new pages overwrite blocks it has (see
  /// ``SharedFlush``), they are written first and `work`'s own flush of the disk carries them:
  /// one flush, not two.
  ///
  /// `file`, the working file that `work` flushes, starts on its way to the disk first.
  public func syncJournal<T>(file: Int32? = nil, alongside work: () -> T) throws(LocalStoreError)
    -> T
  {
    // Its data is on its way while the journal's pages are written, and the fsync itself
    // waits only for what remains.
    if let file, sharedFlush != nil { Writeback.start(file) }
    commits.expectFlushes()
    // The working files this commit lets go are unlinked by the queue's thread: an unlink
    // took up to 6 ms here while the disk was busy, and the fsync needs none of them.
    do {
      try database.commitLeavingRemovals()
    } catch {
      throw LocalStoreError(error)
    }
    if let sharedFlush, sharedFlush.writeJournalForNextFlush() {
      return work()
    }
    guard let journalSync else {
      let result = work()
      syncJournal()
      return result
    }
    let measured = sharedFlush?.measure()
    let ticket = journalSync.request()
    let result = work()
    if journalSync.wait(ticket), let measured { sharedFlush?.noteSynced(measured) }
    return result
  }

  /// Folds the journal into the database, as at a clean unmount.
  public func checkpoint() {
    sharedFlush?.journalWillShrink()
    defer { sharedFlush?.journalShrank() }
    _ = try? database.writeWithoutTransaction { db in
      try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
    }
  }
}

/// Why the local store cannot be used.
public enum LocalStoreError: Error, CustomStringConvertible {
  case unusable(String, String)
  /// The disk under the state folder is full: the state database cannot grow.
  case full(String)
  /// The state database (its path, then what is wrong) no longer reads back as SQLite wrote
  /// it: nothing it says can be trusted, and the state is rebuilt from the hub.
  case damaged(String, String)
  case failed(String)

  /// The error for a failed database operation: a full disk apart from the rest, so that the
  /// file system can answer ENOSPC, which a person can act on, rather than EIO.
  init(_ error: any Error) {
    if let error = error as? DatabaseError, error.resultCode == .SQLITE_FULL {
      self = .full("\(error)")
    } else if let error = error as? DatabaseError, LocalStore.meansDamage(error) {
      self = .damaged("state.sqlite", "\(error)")
    } else {
      self = .failed("\(error)")
    }
  }

  public var description: String {
    switch self {
    case .unusable(let path, let reason): "state folder \(path) is not usable: \(reason)"
    case .damaged(let path, let reason): "the state database \(path) is damaged (\(reason))"
    case .full(let reason), .failed(let reason): "local store failed: \(reason)"
    }
  }
}

/// The persisted attributes of one inode. Times are nanoseconds since the epoch.
public struct InodeRecord: Sendable, Equatable {
  public var inode: UInt64
  public var mode: UInt32
  public var uid: UInt32
  public var gid: UInt32
  public var rdev: UInt64
  public var accessTime: Int64
  public var modificationTime: Int64
  public var changeTime: Int64
  public var target: [UInt8]?

  public init(
    inode: UInt64, mode: UInt32, uid: UInt32, gid: UInt32, rdev: UInt64, accessTime: Int64,
    modificationTime: Int64, changeTime: Int64, target: [UInt8]?
  ) {
    self.inode = inode
    self.mode = mode
    self.uid = uid
    self.gid = gid
    self.rdev = rdev
    self.accessTime = accessTime
    self.modificationTime = modificationTime
    self.changeTime = changeTime
    self.target = target
  }
}

/// A name in a folder.
public struct EntryRecord: Sendable, Equatable {
  public var parent: UInt64
  public var name: [UInt8]
  public var inode: UInt64

  public init(parent: UInt64, name: [UInt8], inode: UInt64) {
    self.parent = parent
    self.name = name
    self.inode = inode
  }
}

/// One extended attribute of an inode.
public struct ExtendedAttributeRecord: Sendable, Equatable {
  public var inode: UInt64
  public var name: [UInt8]
  public var value: [UInt8]

  public init(inode: UInt64, name: [UInt8], value: [UInt8]) {
    self.inode = inode
    self.name = name
    self.value = value
  }
}

/// All that the store holds, as loaded at mount.
public struct Snapshot: Sendable {
  public var inodes: [InodeRecord] = []
  public var entries: [EntryRecord] = []
  public var extendedAttributes: [ExtendedAttributeRecord] = []
  public var nextInode: UInt64 = 0
}

/// One change to the persisted tree.
public enum Change: Sendable {
  case putInode(InodeRecord)
  case deleteInode(UInt64)
  case putEntry(EntryRecord)
  case deleteEntry(parent: UInt64, name: [UInt8])
  case putExtendedAttribute(ExtendedAttributeRecord)
  case deleteExtendedAttribute(inode: UInt64, name: [UInt8])
  case setNextInode(UInt64)
}
