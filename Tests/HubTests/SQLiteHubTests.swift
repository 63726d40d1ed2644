import Foundation
import GRDB
import Testing

@testable import Hub

/// A fresh hub file in its own folder under /var/tmp, removed afterwards.
///
/// /var/tmp rather than /tmp: /tmp may be a tmpfs, and the hub is meant for a real disk, where
/// WAL and locking behave as they will for users.
struct ScratchFolder: ~Copyable {
  let path: String

  init() throws {
    path = "/var/tmp/docsync-hubtests-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}

func sqliteFixture(hubPath: String) throws -> HubFixture {
  HubFixture(
    hub: try SQLiteHub(path: hubPath),
    openAnother: { try SQLiteHub(path: hubPath) },
    corruptBlob: { hash in
      // A large blob's file: flip its first byte, as a damaged disk would.
      if try flipFirstByte(of: hubPath + ".blobs/" + hexString(hash)) { return }
      // Raw SQL from outside the hub, as a damaged disk or a meddling tool would: flip the
      // first byte of the blob's first chunk.
      let queue = try DatabaseQueue(path: hubPath)
      try await queue.write { db in
        let upload = try Int64.fetchOne(
          db, sql: "SELECT upload FROM blobs WHERE hash = ?", arguments: [Data(hash)])
        var data = try #require(
          try Data.fetchOne(
            db, sql: #"SELECT data FROM chunks WHERE upload = ? AND "index" = 0"#,
            arguments: [upload]))
        data[data.startIndex] ^= 0xff
        try db.execute(
          sql: #"UPDATE chunks SET data = ? WHERE upload = ? AND "index" = 0"#,
          arguments: [data, upload])
      }
    },
    loseBlob: { hash in
      let queue = try DatabaseQueue(path: hubPath)
      try await queue.write { db in
        try db.execute(sql: "DELETE FROM blobs WHERE hash = ?", arguments: [Data(hash)])
      }
    })
}

/// Flips the first byte of the file at `path`; false when there is no such file.
func flipFirstByte(of path: String) throws -> Bool {
  guard let handle = FileHandle(forUpdatingAtPath: path) else { return false }
  defer { try? handle.close() }
  var byte = try #require(try handle.read(upToCount: 1))
  byte[byte.startIndex] ^= 0xff
  try handle.seek(toOffset: 0)
  try handle.write(contentsOf: byte)
  return true
}

@Suite("SQLiteHub conformance")
struct SQLiteHubConformanceTests {
  @Test(arguments: HubConformance.checks.map(\.name))
  func check(_ name: String) async throws {
    let folder = try ScratchFolder()
    let fixture = try sqliteFixture(hubPath: folder.path + "/hub.sqlite")
    let check = try #require(HubConformance.checks.first { $0.name == name })
    try await check.run(fixture)
  }
}

@Suite("SQLiteHub small blobs")
struct SQLiteHubSmallBlobTests {
  /// The SQLite hub reads every small blob it has in one request (the conformance check
  /// allows a hub to leave any out).
  @Test func everySmallBlobItHasIsRead() async throws {
    let folder = try ScratchFolder()
    let hub = try SQLiteHub(path: folder.path + "/hub.sqlite")
    let contents = (0..<50).map { pseudoRandomBytes(count: 4096, seed: UInt64($0)) }
    var hashes: [[UInt8]] = []
    for content in contents { hashes.append(try await putBlob(hub, content)) }
    let large = try await putBlob(hub, pseudoRandomBytes(count: 2 << 20, seed: 99))
    let read = try await hub.smallBlobs(hashes: hashes + [large], sizeLimit: 1 << 20)
    #expect(read.count == contents.count)
    for (hash, content) in zip(hashes, contents) { #expect(read[hash] == content) }
  }

  /// And stores every small blob put together, in one request.
  @Test func everySmallBlobPutTogetherIsStored() async throws {
    let folder = try ScratchFolder()
    let hub = try SQLiteHub(path: folder.path + "/hub.sqlite")
    let contents = (0..<50).map { pseudoRandomBytes(count: 4096, seed: UInt64($0)) }
    let blobs = Dictionary(uniqueKeysWithValues: contents.map { (HubHash.sha256($0), $0) })
    #expect(try await hub.putSmallBlobs(blobs) == Set(blobs.keys))
    let read = try await hub.smallBlobs(hashes: Array(blobs.keys), sizeLimit: 1 << 20)
    #expect(read == blobs)
  }
}

@Suite("SQLiteHub space")
struct SQLiteHubSpaceTests {
  /// A new hub gives pruned space back by incremental vacuum from its creation: no mount ever
  /// needs a full VACUUM of it.
  @Test func aNewHubIsInIncrementalVacuumMode() async throws {
    let folder = try ScratchFolder()
    let hub = try SQLiteHub(path: folder.path + "/hub.sqlite")
    try await hub.append([makeRecord("a")])
    let mode = try await hub.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") }
    #expect(mode == 2)
  }

  /// A new hub stores chunks in large pages (see ``SQLiteHub/pageSize``); a hub made with
  /// SQLite's default pages keeps them, and its blobs still go in and come out whole.
  @Test func aNewHubHasLargePagesAndAnOldOneKeepsItsOwn() async throws {
    let folder = try ScratchFolder()
    let hub = try SQLiteHub(path: folder.path + "/hub.sqlite")
    let size = try await hub.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") }
    #expect(size == SQLiteHub.pageSize)

    let old = folder.path + "/old.sqlite"
    let queue = try DatabaseQueue(path: old)
    try await queue.write { db in
      try db.execute(
        sql: "PRAGMA page_size = 4096; PRAGMA application_id = \(SQLiteHub.applicationID)")
    }
    try queue.close()
    let oldHub = try SQLiteHub(path: old)
    let oldSize = try await oldHub.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") }
    #expect(oldSize == 4096)
    let bytes = (0..<(3 * SQLiteHub.chunkSize + 5)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let hash = try await putBlob(oldHub, bytes)
    #expect(try await fetchBlob(oldHub, hash) == bytes)
  }
}

@Suite("SQLiteHub checked puts")
struct SQLiteHubCheckedPutTests {
  /// A put the caller vouches for is stored without a second hash; every fetch still checks
  /// the bytes, so a caller that vouched wrongly cannot hand damage on to other devices.
  @Test func aCheckedPutIsStoredAndAWrongOneIsRefusedOnFetch() async throws {
    let folder = try ScratchFolder()
    let hub = try SQLiteHub(path: folder.path + "/hub.sqlite")
    let bytes = (0..<(2 * SQLiteHub.chunkSize + 3)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
    let hash = HubHash.sha256(bytes)
    let file = try TemporaryFile(bytes)
    try await hub.putBlob(hash: hash, from: file.descriptor, checked: true)
    #expect(try await fetchBlob(hub, hash) == bytes)

    let claimed = HubHash.sha256(Array("something else".utf8))
    try await hub.putBlob(hash: claimed, from: file.descriptor, checked: true)
    await #expect(throws: HubError.self) { _ = try await fetchBlob(hub, claimed) }
  }
}

@Suite("SQLiteHub change watching")
struct SQLiteHubWatchTests {
  /// The wake-up comes from the database's files changing, not from the once-a-second look that
  /// backs it up: another handle's commit moves the watcher's signal itself.
  @Test func anotherHandlesCommitSignalsTheWatcher() async throws {
    let folder = try ScratchFolder()
    let hub = try SQLiteHub(path: folder.path + "/hub.sqlite")
    #expect(hub.watcher != nil)
    let other = try SQLiteHub(path: folder.path + "/hub.sqlite")
    let seen = hub.changes.generation
    try await other.append([makeRecord("from another handle")])
    await hub.changes.wait(after: seen, timeout: .seconds(30))
    #expect(hub.changes.generation != seen)
  }

  /// More hubs than the kernel gives a user inotify instances (128 by default) are all
  /// watched, through one instance: the last one opened still hears a commit, and closing the
  /// others, which watch the same folder, leaves its watch in place.
  @Test func moreHubsThanInotifyInstancesAreAllWatched() async throws {
    let folder = try ScratchFolder()
    var hubs: [SQLiteHub] = []
    for index in 0..<200 {
      let path = folder.path + "/\(index % 2)/hub.sqlite"
      try FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
      hubs.append(try SQLiteHub(path: path))
    }
    #expect(hubs.allSatisfy { $0.watcher != nil })
    let last = hubs.removeLast()
    hubs.removeAll()
    let writer = try SQLiteHub(path: folder.path + "/1/hub.sqlite")
    try await Task.sleep(for: .milliseconds(200))  // what opening it wrote has been heard
    let seen = last.changes.generation
    try await writer.append([makeRecord("heard by the last of many")])
    await last.changes.wait(after: seen, timeout: .seconds(30))
    #expect(last.changes.generation != seen)
  }

  /// SQLite keeps the journal beside the file a symbolic link points to; the watch follows.
  @Test func aHubReachedThroughASymbolicLinkIsWatchedWhereItsFilesAre() async throws {
    let folder = try ScratchFolder()
    try FileManager.default.createDirectory(
      atPath: folder.path + "/real", withIntermediateDirectories: false)
    let writer = try SQLiteHub(path: folder.path + "/real/hub.sqlite")
    try FileManager.default.createSymbolicLink(
      atPath: folder.path + "/link.sqlite", withDestinationPath: folder.path + "/real/hub.sqlite")
    let hub = try SQLiteHub(path: folder.path + "/link.sqlite")
    let seen = hub.changes.generation
    try await writer.append([makeRecord("through the link")])
    await hub.changes.wait(after: seen, timeout: .seconds(30))
    #expect(hub.changes.generation != seen)
  }
}

func mode(of path: String) throws -> Int {
  let attributes = try FileManager.default.attributesOfItem(atPath: path)
  return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
}

@Suite("Hub locations")
struct HubLocationTests {
  @Test func aFilePathOpensTheSQLiteHubCreatingItsFolders() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/deeper/still/hub.sqlite"
    let hub = try openHub(location: path)
    #expect(hub is SQLiteHub)
    #expect(FileManager.default.fileExists(atPath: path))
    // The hub holds every document's content: private to its owner, and so are the folders
    // docsync made for it.
    #expect(try mode(of: path) == 0o600)
    #expect(try mode(of: folder.path + "/deeper") == 0o700)
    #expect(try mode(of: folder.path + "/deeper/still") == 0o700)
    try await hub.append([makeRecord("a")])
    for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
      #expect(try mode(of: path + suffix) == 0o600)
    }
    #expect(try await allRecords(openHub(location: path)) == [makeRecord("a")])
  }

  @Test func aFolderIsRefused() throws {
    let folder = try ScratchFolder()
    expectInvalidLocation(folder.path, mentioning: "is a folder")
  }

  @Test func aFileThatIsNotADatabaseIsRefused() throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/notes.txt"
    try Data(String(repeating: "not a database\n", count: 300).utf8).write(
      to: URL(fileURLWithPath: path))
    expectInvalidLocation(path, mentioning: "not a SQLite database")
    // Refusing must not have damaged the file.
    #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("not a database"))
  }

  @Test func anotherApplicationsDatabaseIsRefused() throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/other.sqlite"
    try DatabaseQueue(path: path).write { db in
      try db.execute(sql: "CREATE TABLE contacts (name TEXT)")
    }
    expectInvalidLocation(path, mentioning: "not a docsync hub")
  }

  @Test(arguments: ["http://example.com/hub", "foo:bar", "s3://bucket/hub", "FILE:/x"])
  func anUnknownSchemeIsRefused(_ location: String) {
    expectInvalidLocation(location, mentioning: "unknown hub kind")
  }

  @Test(arguments: ["postgres://me@localhost:5432/docsync", "postgresql://me@host/db"])
  func postgresIsNotAvailableYet(_ location: String) {
    expectInvalidLocation(location, mentioning: "PostgreSQL hub is not available yet")
  }

  @Test func anEmptyLocationIsRefused() {
    expectInvalidLocation("", mentioning: "empty")
  }

  @Test func aColonInsideAPathIsNotAScheme() throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/odd:name.sqlite"
    #expect(try openHub(location: path) is SQLiteHub)
  }

  @Test func theDefaultLocationFollowsXDG() {
    let location = SQLiteHub.defaultLocation()
    let environment = ProcessInfo.processInfo.environment
    if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
      #expect(location == xdg + "/docsync/hub.sqlite")
    } else {
      #expect(location.hasSuffix("/.local/share/docsync/hub.sqlite"))
    }
  }

  @Test func errorsDescribeThemselvesInOneLine() {
    let errors: [HubError] = [
      .unreachable("x"), .integrity("x"), .missingBlob([0xab, 0x01]), .invalidLocation("x"),
      .failed("x"),
    ]
    for error in errors {
      #expect(!error.description.isEmpty && !error.description.contains("\n"))
    }
    #expect(HubError.missingBlob([0xab, 0x01]).description.contains("ab01"))
  }

  @Test func aCursorFromElsewhereIsRefused() async throws {
    let folder = try ScratchFolder()
    let hub = try SQLiteHub(path: folder.path + "/hub.sqlite")
    await #expect(throws: HubError.self) {
      _ = try await hub.records(after: HubCursor(serialized: "not-a-cursor"), limit: 5)
    }
  }
}

func expectInvalidLocation(
  _ location: String, mentioning text: String, sourceLocation: SourceLocation = #_sourceLocation
) {
  do {
    _ = try openHub(location: location)
    Issue.record("\(location) opened as a hub", sourceLocation: sourceLocation)
  } catch {
    guard case .invalidLocation(let reason) = error else {
      Issue.record("\(location): \(error)", sourceLocation: sourceLocation)
      return
    }
    #expect(reason.contains(text), "\(reason)", sourceLocation: sourceLocation)
  }
}
