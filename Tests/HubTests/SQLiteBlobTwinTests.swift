import ContentModel
import DocumentModel
import Foundation
import GRDB
import Testing

@testable import Hub

/// Old blobs cut into chunks on the SQLite hub (docs/content-layer.md, "Upgrade"): every
/// version stays readable byte for byte, versions share chunks, a conversion stopped anywhere
/// loses nothing and goes on, and prune and forget keep their promises over twins.
@Suite("SQLiteHub blob twins")
struct SQLiteBlobTwinTests {
  /// A library made as blobs, as before chunks: `count` versions of one file of `size` bytes,
  /// each a few bytes edited from the one before, each named by its own record.
  struct Made {
    var contents: [[UInt8]] = []
    var hashes: [[UInt8]] { contents.map { HubHash.sha256($0) } }
    var records: [HubRecord] = []
  }

  static func pseudoRandom(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    return (0..<count).map { _ -> UInt8 in
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      return UInt8(truncatingIfNeeded: state)
    }
  }

  static func makeLibrary(
    _ hub: SQLiteHub, in folder: String, count: Int = 20, size: Int = 1 << 20
  ) async throws -> Made {
    var made = Made()
    var content = pseudoRandom(size, seed: 7)
    for index in 0..<count {
      if index > 0 {
        // A few bytes changed at one place: the versions share all chunks but one or two.
        let at = (index * 48_611) % (size - 16)
        for offset in 0..<16 { content[at + offset] ^= UInt8(index) }
      }
      let hash = try await put(content, into: hub, in: folder)
      let record = HubRecord(
        id: HubHash.sha256(Array("record \(index)".utf8)), payload: Array("v\(index)".utf8),
        blobs: [hash])
      try await hub.append([record])
      made.contents.append(content)
      made.records.append(record)
    }
    return made
  }

  static func put(_ content: [UInt8], into hub: SQLiteHub, in folder: String) async throws
    -> [UInt8]
  {
    let hash = HubHash.sha256(content)
    let file = folder + "/put-\(UUID().uuidString)"
    try Data(content).write(to: URL(fileURLWithPath: file))
    let fd = open(file, O_RDONLY)
    defer {
      close(fd)
      unlink(file)
    }
    try await hub.putBlob(hash: hash, from: fd)
    return hash
  }

  /// The content of a twin, read from the hub's objects as a device's fetch reads them: every
  /// node and chunk checked against its id.
  static func assemble(_ root: ContentRoot, from hub: any ObjectStore) async throws -> [UInt8] {
    let verifier = ObjectVerifier()
    var level = [ManifestEntry(id: root.object, size: root.size)]
    var height = root.height
    while height > 0 {
      let got = try await hub.objects(level.map(\.id.bytes))
      var next: [ManifestEntry] = []
      for entry in level {
        let framed = try #require(got[entry.id.bytes], "node \(entry.id.hex) missing")
        next += try verifier.node(framed, for: entry, height: height).entries
      }
      level = next
      height -= 1
    }
    var bytes: [UInt8] = []
    for start in stride(from: 0, to: level.count, by: 512) {
      let part = Array(level[start..<min(start + 512, level.count)])
      let got = try await hub.objects(part.map(\.id.bytes))
      for entry in part {
        let framed = try #require(got[entry.id.bytes], "chunk \(entry.id.hex) missing")
        bytes += try verifier.chunk(framed, for: entry)
      }
    }
    return bytes
  }

  /// The content of `hash` as a device could get it now: its blob, else its twin.
  static func content(of hash: [UInt8], from hub: SQLiteHub, in folder: String) async throws
    -> [UInt8]
  {
    if let root = try await hub.blobRoots([hash])[hash] {
      return try await assemble(root, from: hub)
    }
    let file = folder + "/fetch-\(UUID().uuidString)"
    let fd = open(file, O_RDWR | O_CREAT, 0o600)
    defer {
      close(fd)
      unlink(file)
    }
    try await hub.fetchBlob(hash: hash, to: fd)
    return Array(try Data(contentsOf: URL(fileURLWithPath: file)))
  }

  /// Every version reads as it was made.
  static func expectReadable(
    _ made: Made, _ hub: SQLiteHub, in folder: String, skipping: Set<Int> = [],
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    for (index, expected) in made.contents.enumerated() where !skipping.contains(index) {
      let read = try await content(of: made.hashes[index], from: hub, in: folder)
      #expect(read == expected, "version \(index)", sourceLocation: sourceLocation)
    }
  }

  /// The hub file, its blob folder and its packs, in bytes, as `du -sb` counts them.
  static func hubSize(_ path: String) -> Int64 {
    var total: Int64 = 0
    let files = FileManager.default
    for name in [path, path + "-wal"] {
      total += ((try? files.attributesOfItem(atPath: name))?[.size] as? Int64) ?? 0
    }
    for folder in [path + ".blobs", path + ".packs"] {
      for name in (try? files.contentsOfDirectory(atPath: folder)) ?? [] {
        total += ((try? files.attributesOfItem(atPath: folder + "/" + name))?[.size] as? Int64) ?? 0
      }
    }
    return total
  }

  static func count(_ sql: String, _ path: String) throws -> Int {
    try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: sql) ?? -1 }
  }

  @Test func conversionKeepsEveryVersionAndSharesChunks() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let made = try await Self.makeLibrary(hub, in: folder.path)
    try await hub.reclaimSpace()
    let before = Self.hubSize(path)
    #expect(try Self.count("SELECT count(*) FROM blobs", path) == 20)

    let total = try await hub.convertAllBlobs()
    #expect(total.converted == 20)
    #expect(total.damaged == 0)
    #expect(try Self.count("SELECT count(*) FROM blobs", path) == 0)
    #expect(try Self.count("SELECT count(*) FROM blob_twins", path) == 20)
    // No blob file is left, and the roots are what a device cuts of the same bytes.
    #expect(((try? FileManager.default.contentsOfDirectory(atPath: path + ".blobs")) ?? []) == [])
    let roots = try await hub.blobRoots(made.hashes)
    for (index, content) in made.contents.enumerated() {
      var splitter = ContentSplitter()
      content.withUnsafeBytes { splitter.append($0) { _, _ in } }
      let entries = splitter.finish { _, _ in }
      #expect(roots[made.hashes[index]] == ManifestBuilder().build(chunks: entries).root)
    }
    try await Self.expectReadable(made, hub, in: folder.path)
    // 20 MiB of versions that differ in 16 bytes each: about 1 MiB and a chunk or two each.
    let after = Self.hubSize(path)
    #expect(after * 4 < before, "hub \(before) bytes before, \(after) after")

    // Records naming a converted blob go in; a prune of nothing keeps every twin whole.
    let again = HubRecord(
      id: HubHash.sha256(Array("again".utf8)), payload: [1], blobs: [made.hashes[3]])
    try await hub.append([again])
    try await hub.prune(records: [[UInt8](repeating: 0xEE, count: 32)])
    try await Self.expectReadable(made, hub, in: folder.path)
  }

  @Test func conversionIsIdempotent() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let made = try await Self.makeLibrary(hub, in: folder.path, count: 6, size: 300_000)
    #expect(try await hub.convertAllBlobs().converted == 6)
    let objects = try Self.count("SELECT count(*) FROM objects", path)
    let packs = Self.hubSize(path)
    let second = try await hub.convertAllBlobs()
    #expect(second.converted == 0 && second.damaged == 0 && second.skipped == 0)
    #expect(try Self.count("SELECT count(*) FROM objects", path) == objects)
    #expect(Self.hubSize(path) <= packs)
    // Another process's hub converts nothing either.
    #expect(try await SQLiteHub(path: path).convertAllBlobs().converted == 0)
    try await Self.expectReadable(made, hub, in: folder.path)
  }

  /// Stopped at each step of a blob's conversion, as a crash would stop it: every version is
  /// still readable (as its blob or as its twin), each blob held once, and the next run goes
  /// on from there.
  @Test(arguments: TwinStop.Step.allCases)
  func aConversionStoppedAnywhereLosesNothing(_ step: TwinStop.Step) async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let made = try await Self.makeLibrary(hub, in: folder.path, count: 5, size: 300_000)
    func expectWhole() async throws {
      try await Self.expectReadable(made, hub, in: folder.path)
      let held = try Self.count(
        "SELECT (SELECT count(*) FROM blob_twins) + (SELECT count(*) FROM blobs)", path)
      #expect(held == 5)
    }
    var stops = 0
    while try Self.count("SELECT count(*) FROM blobs", path) > 0 && stops < 10 {
      hub.twinStop.arm(step)
      await #expect(throws: HubError.self) { try await hub.convertBlobs(limit: 100) }
      hub.twinStop.arm(nil)
      stops += 1
      try await expectWhole()
      // One blob further, unstopped: the one stopped above when it is not converted yet.
      _ = try await hub.convertBlobs(limit: 1)
      try await expectWhole()
    }
    #expect(stops >= 3)
    #expect(try Self.count("SELECT count(*) FROM blob_twins", path) == 5)
    #expect(try Self.count("SELECT count(*) FROM blobs", path) == 0)
    // A stop before a file's removal leaves files no row names: the sweep takes them.
    await hub.sweepBlobFiles(olderThan: 0)
    #expect(((try? FileManager.default.contentsOfDirectory(atPath: path + ".blobs")) ?? []) == [])
    try await expectWhole()
  }

  @Test func forgetAndPruneDropWhatNoRecordNeedsAndNothingElse() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let made = try await Self.makeLibrary(hub, in: folder.path, count: 8, size: 400_000)
    try await hub.convertAllBlobs()
    let objects = try Self.count("SELECT count(*) FROM objects", path)

    // Forget the first three versions: their twins go, and the chunks only they had.
    try await hub.forget(records: made.records[0..<3].map(\.id))
    #expect(try await hub.blobRoots(Array(made.hashes[0..<3])).isEmpty)
    #expect(try Self.count("SELECT count(*) FROM blob_twins", path) == 5)
    let afterForget = try Self.count("SELECT count(*) FROM objects", path)
    #expect(afterForget < objects, "\(objects) objects before, \(afterForget) after")
    try await Self.expectReadable(made, hub, in: folder.path, skipping: [0, 1, 2])

    // Prune releases two more; the rest, which share most chunks with them, stay whole.
    try await hub.prune(records: made.records[3..<5].map(\.id))
    #expect(try Self.count("SELECT count(*) FROM blob_twins", path) == 3)
    #expect(try Self.count("SELECT count(*) FROM objects", path) < afterForget)
    try await Self.expectReadable(made, hub, in: folder.path, skipping: [0, 1, 2, 3, 4])

    // The last records gone: nothing of the content stays.
    try await hub.forget(records: made.records[5...].map(\.id))
    #expect(try Self.count("SELECT count(*) FROM blob_twins", path) == 0)
    #expect(try Self.count("SELECT count(*) FROM objects", path) == 0)
  }

  /// A twin's objects keep their grace against a sweep of old objects: aged past it, they stay
  /// because a record names the twin's blob.
  @Test func aTwinKeepsItsObjectsAliveWhileARecordNamesItsBlob() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let made = try await Self.makeLibrary(hub, in: folder.path, count: 3, size: 300_000)
    try await hub.convertAllBlobs()
    let objects = try Self.count("SELECT count(*) FROM objects", path)
    try await DatabaseQueue(path: path).write { db in
      try db.execute(sql: "UPDATE objects SET touched = touched - 2 * 86400")
    }
    try await hub.prune(records: [[UInt8](repeating: 0xEE, count: 32)])
    #expect(try Self.count("SELECT count(*) FROM objects", path) == objects)
    try await Self.expectReadable(made, hub, in: folder.path)
  }

  @Test func aBlobPutAgainAfterItsConversionIsHarmless() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let made = try await Self.makeLibrary(hub, in: folder.path, count: 3, size: 300_000)
    try await hub.convertAllBlobs()
    // An old path (a merge's blob, a device that moves blobs) puts the same bytes again.
    _ = try await Self.put(made.contents[1], into: hub, in: folder.path)
    #expect(try await hub.hasBlob(hash: made.hashes[1]))
    try await Self.expectReadable(made, hub, in: folder.path)
    let again = try await hub.convertAllBlobs()
    #expect(again.converted == 1)
    #expect(try Self.count("SELECT count(*) FROM blobs", path) == 0)
    #expect(try Self.count("SELECT count(*) FROM blob_twins", path) == 3)
    try await Self.expectReadable(made, hub, in: folder.path)
  }

  @Test func aDamagedBlobIsNotConvertedButWanted() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let made = try await Self.makeLibrary(hub, in: folder.path, count: 3, size: 300_000)
    let damaged = made.hashes[1]
    #expect(try flipFirstByte(of: path + ".blobs/" + hexString(damaged)))
    let total = try await hub.convertAllBlobs()
    #expect(total.converted == 2)
    #expect(total.damaged == 1)
    #expect(try await hub.blobRoots([damaged]).isEmpty)
    #expect(try await hub.wantedBlobs() == [damaged])
    // A device that has it puts it again; the next run converts it.
    _ = try await Self.put(made.contents[1], into: hub, in: folder.path)
    #expect(try await hub.wantedBlobs().isEmpty)
    #expect(try await hub.convertAllBlobs().converted == 1)
    try await Self.expectReadable(made, hub, in: folder.path)
  }

  /// A hub asked to convert in the background (as a mount asks) converts what it holds soon
  /// after, and what records name later (from this process or another) at its next run.
  @Test(.timeLimit(.minutes(2)))
  func aHubConvertsInTheBackgroundWhenAsked() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let made = try await Self.makeLibrary(hub, in: folder.path, count: 3, size: 200_000)
    // Not asked: the blobs stay as they were put.
    try await Task.sleep(for: .milliseconds(300))
    #expect(try Self.count("SELECT count(*) FROM blobs", path) == 3)
    hub.convertInBackground(after: .milliseconds(50), interval: .milliseconds(200))
    func waitUntil(_ twins: Int) async throws {
      let end = ContinuousClock.now + .seconds(60)
      while try Self.count("SELECT count(*) FROM blob_twins", path) < twins
        && ContinuousClock.now < end
      {
        try await Task.sleep(for: .milliseconds(50))
      }
    }
    try await waitUntil(3)
    #expect(try Self.count("SELECT count(*) FROM blob_twins", path) == 3)
    // A merge's blob, say, arrives from another process, and a record names it.
    let other = try SQLiteHub(path: path)
    let later = Self.pseudoRandom(150_000, seed: 99)
    let hash = try await Self.put(later, into: other, in: folder.path)
    try await other.append([
      HubRecord(id: HubHash.sha256(Array("later".utf8)), payload: [2], blobs: [hash])
    ])
    try await waitUntil(4)
    #expect(try Self.count("SELECT count(*) FROM blob_twins", path) == 4)
    #expect(try Self.count("SELECT count(*) FROM blobs", path) == 0)
    try await Self.expectReadable(made, hub, in: folder.path)
    #expect(try await Self.content(of: hash, from: hub, in: folder.path) == later)
  }

  /// A twin is no blob to report: a device that finds the blob gone hears it is intact, and
  /// nothing is wanted.
  @Test func aConvertedBlobReportedMissingIsNotWanted() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let made = try await Self.makeLibrary(hub, in: folder.path, count: 2, size: 100_000)
    try await hub.convertAllBlobs()
    #expect(try await hub.reportDamagedBlob(hash: made.hashes[0]) == .intact)
    #expect(try await hub.wantedBlobs().isEmpty)
  }

  /// A docsync that knows no twins refuses the hub file in one line.
  @Test func theTwinsStepNeedsFormat4() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    _ = try SQLiteHub(path: path)
    let needed = try await DatabaseQueue(path: path).read { db in
      try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = 'devices_from'")
    }
    #expect(needed == "4")
    #expect(SQLiteHub.format == 4)
  }

  /// `docsync hub init HUB-FILE` killed at random moments while it converts: after every kill,
  /// every version is readable and each blob is held once (blob or twin); the last run ends
  /// the work.
  @Test(.timeLimit(.minutes(10)))
  func killedWhileConvertingLosesNothing() async throws {
    let docsync = try PostgresTestCluster.docsyncBinary()
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let made = try await Self.makeLibrary(
      try SQLiteHub(path: path), in: folder.path, count: 40, size: 1 << 20)
    // Kills that hit a conversion with work left, not a process that had finished.
    var kills = 0
    for round in 0..<60 where kills < 24 {
      let left = try Self.count("SELECT count(*) FROM blobs", path)
      if left == 0 { break }
      let pid = try spawnQuietly([docsync, "hub", "init", path])
      // From the opening of the file to the cutting of a blob or two (a run converts about
      // 40 MiB a second here): most kills land in a blob's conversion, at its every step.
      usleep(UInt32(5_000 + (round * 7_919) % 80_000))
      var status: Int32 = 0
      if waitpid(pid, &status, WNOHANG) == 0 {
        kill(pid, SIGKILL)
        kills += 1
      }
      waitpid(pid, &status, 0)
      let hub = try SQLiteHub(path: path)
      try await Self.expectReadable(made, hub, in: folder.path)
      let held = try Self.count(
        "SELECT (SELECT count(*) FROM blob_twins) + (SELECT count(*) FROM blobs)", path)
      #expect(held == 40, "round \(round): \(held) blobs and twins")
      #expect(try Self.count("SELECT count(*) FROM records", path) == 40)
    }
    #expect(kills >= 20)
    let pid = try spawnQuietly([docsync, "hub", "init", path])
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    #expect(status == 0)
    let hub = try SQLiteHub(path: path)
    #expect(try Self.count("SELECT count(*) FROM blob_twins", path) == 40)
    #expect(try Self.count("SELECT count(*) FROM blobs", path) == 0)
    try await Self.expectReadable(made, hub, in: folder.path)
  }
}

/// Starts `argv` with its output thrown away; returns its process id.
func spawnQuietly(_ argv: [String]) throws -> pid_t {
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
  var pid: pid_t = 0
  let arguments = argv.map { strdup($0) } + [nil]
  defer { for argument in arguments { free(argument) } }
  let result = posix_spawn(&pid, argv[0], &actions, nil, arguments, environ)
  guard result == 0 else { throw SpawnFailed(program: argv[0], code: result) }
  return pid
}

/// `posix_spawn` refused to start a program.
struct SpawnFailed: Error {
  var program: String
  var code: Int32
}
