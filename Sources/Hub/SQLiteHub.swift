import Foundation
import GRDB

/// The embedded hub: one SQLite file that every mount of one user on one machine shares.
///
/// Several processes may open the same file: the database is in WAL mode, so readers never wait
/// for the writer, and writers wait for each other up to ``busyTimeout`` instead of failing.
/// Small blobs are stored in the same file; large ones (above ``fileThreshold``) as files in the
/// folder beside it (``BlobFolder``). Both stream both ways in bounded memory.
public final class SQLiteHub: Hub {
  /// The database file.
  public let path: String

  let pool: DatabasePool

  /// Bumped when the database's files change on disk, from this process or another.
  let changes = ChangeSignal()
  let watcher: FileChangeWatcher?

  /// Where blobs above ``fileThreshold`` live: `<hub file>.blobs/`, beside the file the hub's
  /// path leads to.
  let blobFolder: BlobFolder

  /// Where content objects' bytes live: pack files in `<hub file>.packs/`, beside the blob
  /// folder (see ``PackFolder``). Objects stored before packs keep their bytes in their rows.
  let packs: PackFolder

  /// Where a test stops a blob's conversion (see ``convertBlobs(after:limit:)``).
  public let twinStop = TwinStop()

  /// Whether and when this instance converts blobs in the background.
  let twinSchedule = TwinSchedule()

  /// The size past which a hub starts a new pack: large enough that a 1 GiB push makes a few
  /// dozen files and `fsync`s of the folder, small enough that a prune's rewrite of a pack
  /// half dead copies little.
  static let packSize: Int64 = 64 << 20

  /// The largest blob kept in the hub file (as one chunk); a larger one becomes a file.
  ///
  /// In the hub file, each byte is written twice (the write-ahead log, then its checkpoint);
  /// in a file, once, with two fsyncs (file and folder). Blobs up to this size are the small
  /// content that an initial sync puts and reads in batches (`putSmallBlobs`, `smallBlobs`),
  /// one transaction for many, which one file each would slow down.
  static let fileThreshold: Int64 = 64 << 10

  /// Bytes per stored chunk, and the most a blob transfer holds in memory at once.
  static let chunkSize = 1 << 20

  /// Bytes per database page of a new hub (an existing hub keeps the size it was made with).
  ///
  /// A chunk is a chain of overflow pages, each a WAL frame and a lookup on its own: with
  /// SQLite's 4 KiB, 1 GiB of chunks went into a hub at 75 MiB/s and came out at 380 MiB/s;
  /// with 32 KiB at 170 and 1,630 (1 MiB chunks, one transaction each, this machine). The
  /// checkpoint every 1,000 pages also comes eight times less often. Small transactions write
  /// larger frames: 5,000 puts of 4 KiB blobs took 2.9 s instead of 2.0 s; 64 KiB pages took
  /// 4.1 s for little more on large ones.
  static let pageSize = 32768

  /// How often ``waitForChanges(after:timeout:)`` looks for other processes' writes when the
  /// database's folder cannot be watched.
  static let pollInterval = Duration.milliseconds(20)

  /// How often it looks anyway while the folder is watched: a safety net, not the mechanism.
  static let watchedPollInterval = Duration.seconds(1)

  /// How long a writer waits for another process's write transaction before giving up.
  ///
  /// Write transactions are short (one batch of records, or one chunk of a blob), so a wait this
  /// long means something is stuck rather than busy.
  static let busyTimeout: TimeInterval = 30

  /// Marks the file as a docsync hub in the SQLite header (`PRAGMA application_id`), so that a
  /// hub location pointing at some other application's database is refused, not migrated.
  static let applicationID: Int32 = 0x6473_6862  // "dshb"

  /// The newest format of hub file this docsync reads. A schema step that docsyncs without it
  /// cannot work with sets the `devices_from` setting to its format and raises this with it;
  /// steps that older docsyncs can live with (an index, a table they never read) leave both.
  static let format = 4

  /// Seconds that a content object stays after its last put or presence check although no
  /// record reaches it (see ``ObjectStore``): an upload's objects wait this long for its record.
  static let objectGrace: Int64 = 86_400

  /// Opens the hub at `path`, creating the file and its parent folders when missing.
  ///
  /// Throws ``HubError/invalidLocation(_:)`` when the path is a folder, cannot be created or
  /// opened, is not a SQLite database, or is some other application's database.
  public convenience init(path: String) throws(HubError) {
    try self.init(path: path, packSize: Self.packSize)
  }

  /// Opens the hub at `path`, starting a new pack past `packSize` bytes (tests make it small).
  init(path: String, packSize: Int64) throws(HubError) {
    let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
    self.path = absolute
    let files = FileManager.default
    var isFolder: ObjCBool = false
    if files.fileExists(atPath: absolute, isDirectory: &isFolder) {
      if isFolder.boolValue {
        throw .invalidLocation("\(absolute) is a folder, not a hub database file")
      }
      if access(absolute, R_OK | W_OK) != 0 {
        throw .invalidLocation(
          "\(absolute) cannot be read and written: \(String(cString: strerror(errno)))")
      }
    } else {
      try Self.createPrivately(absolute)
    }

    var configuration = Configuration()
    configuration.label = "docsync.hub"
    configuration.busyMode = .timeout(Self.busyTimeout)
    configuration.prepareDatabase { db in
      db.add(function: Self.formatFunction)
      // Only a file with no table yet takes this (before WAL mode writes its header): a new hub
      // gives pruned space back by incremental vacuum from the start, never by a full VACUUM,
      // which would hold every mount's writes for as long as it copies the whole hub.
      if !db.configuration.readonly {
        // The page size first: after auto_vacuum, SQLite keeps its default (sqlite3 3.40 here).
        try db.execute(sql: "PRAGMA page_size = \(Self.pageSize)")
        try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
      }
    }
    do {
      pool = try DatabasePool(path: absolute, configuration: configuration)
      try Self.checkApplication(pool, path: absolute)
      try Self.migrate(pool)
      // A hub file this docsync cannot use is still opened, so that a mount set up before
      // serves its files; every read and write through it then refuses (see `read`).
      if (try? pool.read(Self.checkDevicesFrom)) != nil {
        try Self.discardAbandonedUploads(pool)
      }
    } catch let error as HubError {
      throw error
    } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB {
      throw .invalidLocation("\(absolute) is not a SQLite database")
    } catch {
      throw .invalidLocation("cannot open \(absolute) as a hub: \(error)")
    }
    // SQLite follows a symbolic link to the database and keeps its journal beside the target.
    let file =
      realpath(absolute, nil).map { pointer in
        defer { free(pointer) }
        return String(cString: pointer)
      } ?? absolute
    let name = (file as NSString).lastPathComponent
    blobFolder = try BlobFolder(path: file + ".blobs")
    packs = try PackFolder(path: file + ".packs", packSize: packSize)
    watcher = FileChangeWatcher(
      directory: (file as NSString).deletingLastPathComponent,
      names: [name, name + "-wal", name + "-journal"], signal: changes)
    // Temporary files of puts that a crash cut short (a day is far longer than any put still
    // running). Blob files that no row names wait for the next prune: checking every large
    // blob's row here took the hub's write lock and a lookup per file at every start.
    for name in blobFolder.leftovers(olderThan: 86_400, blobs: false).temporaries {
      blobFolder.discard(name)
    }
  }

  deinit {
    blobFolder.close()
  }

  /// Makes the hub file, empty, readable and writable by its owner only, and the folders
  /// above it that are missing, private too: the hub holds every document's content. SQLite
  /// gives its journal files the database file's mode.
  static func createPrivately(_ path: String) throws(HubError) {
    var folder = ""
    for component in (path as NSString).deletingLastPathComponent.split(separator: "/") {
      folder += "/" + component
      if mkdir(folder, 0o700) != 0 {
        var info = stat()
        let problem =
          errno != EEXIST
          ? String(cString: strerror(errno))
          : stat(folder, &info) == 0 && info.st_mode & S_IFMT != S_IFDIR
            ? "it is not a folder" : nil
        if let problem {
          throw .invalidLocation("cannot create the folder \(folder) for the hub: \(problem)")
        }
      }
    }
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    if fd < 0 && errno != EEXIST {
      throw .invalidLocation("cannot create the hub \(path): \(String(cString: strerror(errno)))")
    }
    if fd >= 0 { close(fd) }
  }

  /// Where a user's hub lives when none is named: `$XDG_DATA_HOME/docsync/hub.sqlite`, by default
  /// `~/.local/share/docsync/hub.sqlite`, so that every mount of one user shares it.
  public static func defaultLocation() -> String {
    let environment = ProcessInfo.processInfo.environment
    // The XDG base directory specification says a relative value is invalid and must be ignored.
    let dataHome: String
    if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
      dataHome = xdg
    } else {
      let home =
        environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
        ?? FileManager.default.homeDirectoryForCurrentUser.path
      dataHome = home + "/.local/share"
    }
    return dataHome + "/docsync/hub.sqlite"
  }

  private static func checkApplication(_ pool: DatabasePool, path: String) throws {
    try pool.read { db in
      let id = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
      // A racing process may have created GRDB's bookkeeping table before its first migration
      // committed: that file is still ours.
      let others =
        try Int.fetchOne(
          db,
          sql: """
            SELECT count(*) FROM sqlite_master
            WHERE name NOT LIKE 'sqlite_%' AND name != 'grdb_migrations'
            """) ?? 0
      if id != applicationID && others > 0 {
        throw HubError.invalidLocation("\(path) is a SQLite database, but not a docsync hub")
      }
    }
  }

  static var migrator: DatabaseMigrator {
    var migrator = DatabaseMigrator()
    // Released steps are never edited: a change is a new step.
    migrator.registerMigration("v1 records and chunked blobs") { db in
      try db.execute(
        sql: """
          PRAGMA application_id = \(applicationID);

          -- seq is the hub order and the cursor. AUTOINCREMENT so that a seq is never reused.
          CREATE TABLE records (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id BLOB NOT NULL UNIQUE,
            payload BLOB NOT NULL
          );
          CREATE TABLE record_blobs (
            seq INTEGER NOT NULL REFERENCES records(seq),
            position INTEGER NOT NULL,
            hash BLOB NOT NULL,
            PRIMARY KEY (seq, position)
          ) WITHOUT ROWID;

          -- A blob is written in chunks, each in its own short transaction so that a large
          -- upload does not hold the write lock; the chunks belong to an upload until the final
          -- transaction names that upload in blobs. Two processes putting the same blob at once
          -- each write their own upload, and the loser's chunks are dropped.
          CREATE TABLE uploads (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            hash BLOB NOT NULL,
            started REAL NOT NULL
          );
          CREATE TABLE blobs (
            hash BLOB PRIMARY KEY,
            size INTEGER NOT NULL,
            upload INTEGER NOT NULL REFERENCES uploads(id)
          ) WITHOUT ROWID;
          CREATE TABLE chunks (
            upload INTEGER NOT NULL REFERENCES uploads(id),
            "index" INTEGER NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (upload, "index")
          );
          """)
    }
    registerRepairMigration(&migrator)
    migrator.registerMigration("v2 retention setting") { db in
      // One row per library-wide setting; `retention` holds RetentionPolicy.serialized.
      try db.execute(
        sql: "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
    }
    migrator.registerMigration("v3 erasures") { db in
      // What devices must drop: records whose content retention released (forgotten = 0) and
      // records `docsync forget` removed (forgotten = 1), by id only. seq is the cursor, in
      // commit order for the same reason as records' (see SQLiteHub+Records).
      try db.execute(
        sql: """
          CREATE TABLE erasures (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id BLOB NOT NULL,
            forgotten INTEGER NOT NULL
          )
          """)
    }
    migrator.registerMigration("v4 blob files") { db in
      // 1: the blob's bytes are the file named by its hash in the blob folder, and its upload
      // has no chunks. Blobs stored before keep their chunks (0).
      try db.execute(sql: "ALTER TABLE blobs ADD COLUMN file INTEGER NOT NULL DEFAULT 0")
    }
    registerObjectsMigration(&migrator)
    registerPacksMigration(&migrator)
    registerAdoptedPacksMigration(&migrator)
    registerTwinsMigration(&migrator)
    return migrator
  }

  /// `docsync_hub_format()`: the format this docsync reads, defined on each of its connections.
  /// Triggers call it where a docsync that predates `devices_from` would do harm (see the packs
  /// step): there it is undefined, so the statement fails instead.
  static let formatFunction = DatabaseFunction(
    "docsync_hub_format", argumentCount: 0, pure: true
  ) { _ in format }

  /// Refuses, in one line, a hub file that a newer docsync changed in a way this one cannot use.
  ///
  /// Read at the start of every transaction of `read` and `write`: this docsync is the hub's
  /// code as well as the device's, and must neither read what it would misunderstand (an
  /// object stored elsewhere would look damaged, and be dropped) nor write in an old shape,
  /// even when another device's newer docsync upgrades a shared hub file while this mount
  /// runs. A lookup of one row, against a transaction's cost.
  static func checkDevicesFrom(_ db: Database) throws {
    // Cached: every transaction of the hub runs it.
    let value = try String.fetchOne(
      db.cachedStatement(sql: "SELECT value FROM settings WHERE key = 'devices_from'"))
    guard let value else { return }
    guard let needed = Int(value), needed <= format else {
      throw HubError.needsNewerDocsync(
        "the hub file is at format \(value), and this docsync reads formats up to \(format)")
    }
  }

  /// Runs the migrations, tolerating another process that runs them at the same moment.
  ///
  /// GRDB reads the applied steps before it opens the step's transaction, so two processes that
  /// open a new hub together can both try the first step; the loser's `CREATE TABLE` fails and
  /// rolls back. Once the winner has committed, the steps are complete and there is nothing to do.
  private static func migrate(_ pool: DatabasePool) throws {
    let migrator = Self.migrator
    var attempt = 0
    while true {
      do {
        try migrator.migrate(pool)
        return
      } catch {
        attempt += 1
        if try pool.read(migrator.hasCompletedMigrations) { return }
        if attempt >= 3 { throw error }
      }
    }
  }

  /// Drops the chunks of uploads that never completed, from a process that crashed or was killed
  /// mid-upload. A day is far longer than any upload still in progress in another process.
  private static func discardAbandonedUploads(_ pool: DatabasePool) throws {
    let cutoff = Date().timeIntervalSince1970 - 86_400
    try pool.write { db in
      let abandoned = """
        SELECT id FROM uploads
        WHERE started < ? AND id NOT IN (SELECT upload FROM blobs)
        """
      try db.execute(
        sql: "DELETE FROM chunks WHERE upload IN (\(abandoned))", arguments: [cutoff])
      try db.execute(sql: "DELETE FROM uploads WHERE id IN (\(abandoned))", arguments: [cutoff])
    }
  }

  func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(HubError)
    -> T
  {
    do {
      return try await pool.read { db in
        try Self.checkDevicesFrom(db)
        return try body(db)
      }
    } catch {
      throw HubError(database: error)
    }
  }

  func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(HubError)
    -> T
  {
    do {
      return try await pool.write { db in
        try Self.checkDevicesFrom(db)
        return try body(db)
      }
    } catch {
      throw HubError(database: error)
    }
  }
}

extension HubError {
  /// Sorts a GRDB or SQLite failure into what a caller can do about it.
  init(database error: any Error) {
    if let error = error as? HubError {
      self = error
      return
    }
    guard let error = error as? DatabaseError else {
      self = .failed("\(error)")
      return
    }
    switch error.resultCode {
    case .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_CANTOPEN, .SQLITE_IOERR:
      self = .unreachable("the hub database is unavailable: \(error.message ?? "\(error)")")
    case .SQLITE_CORRUPT, .SQLITE_NOTADB:
      self = .integrity("the hub database is damaged: \(error.message ?? "\(error)")")
    default:
      self = .failed("\(error)")
    }
  }
}
