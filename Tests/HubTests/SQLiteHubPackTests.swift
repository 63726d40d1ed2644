import Foundation
import GRDB
import Testing

@testable import Hub

/// Content objects' bytes in pack files beside the SQLite hub: many packs, two writers at once,
/// objects from before packs, damage, prune's rewrites, a put cut short, a read racing a rewrite.
@Suite("SQLiteHub object packs")
struct SQLiteHubPackTests {
  /// Distinct, incompressible-looking bytes for object `index` of `size` bytes.
  static func object(_ index: Int, size: Int = 6_000, salt: UInt8 = 0) -> HubObject {
    var state = UInt64(index) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(salt) &+ 1
    let data = (0..<size).map { _ -> UInt8 in
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      return UInt8(truncatingIfNeeded: state)
    }
    return HubObject(id: HubHash.sha256(data), data: data)
  }

  /// Where the row of `id` says its bytes are; nil pack for bytes held in the row.
  static func place(_ id: [UInt8], in path: String) throws -> (pack: String?, offset: Int64?)? {
    let queue = try DatabaseQueue(path: path)
    return try queue.read { db in
      try Row.fetchOne(
        db, sql: #"SELECT pack, "offset" FROM objects WHERE id = ?"#, arguments: [Data(id)]
      ).map { (pack: $0["pack"] as String?, offset: $0["offset"] as Int64?) }
    }
  }

  static func rowCount(_ path: String) throws -> Int {
    try DatabaseQueue(path: path).read { db in
      try Int.fetchOne(db, sql: "SELECT count(*) FROM objects") ?? -1
    }
  }

  static func packFiles(_ path: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: path + ".packs")) ?? []).sorted()
  }

  /// Moves the last put of `ids` two days back, past the grace, so that a prune may free them.
  static func age(_ ids: [[UInt8]], in path: String) throws {
    try DatabaseQueue(path: path).write { db in
      for id in ids {
        try db.execute(
          sql: "UPDATE objects SET touched = touched - 2 * 86400 WHERE id = ?",
          arguments: [Data(id)])
      }
    }
  }

  /// A prune of no record: it sweeps what is past its grace and compacts the packs.
  static func prune(_ hub: SQLiteHub) async throws {
    try await hub.prune(records: [[UInt8](repeating: 0xEE, count: 32)])
  }

  /// A docsync from before `devices_from` (a mount still running the build a package upgrade
  /// replaced) cannot delete an object: it would take a packed one for damaged, or prune it
  /// unread.
  /// Its connections lack the format function, as this plain queue does; the hub's have it.
  @Test func aConnectionWithoutTheFormatFunctionCannotDeleteAPackedObject() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let packed = Self.object(1)
    try await hub.putObjects([packed])
    #expect(try Self.place(packed.id, in: path)?.pack != nil)
    let older = try DatabaseQueue(path: path)
    #expect(throws: DatabaseError.self) {
      try older.write { db in
        try db.execute(sql: "DELETE FROM objects WHERE id = ?", arguments: [Data(packed.id)])
      }
    }
    #expect(try await hub.objects([packed.id]) == [packed.id: packed.data])
    // SQLite resolves the trigger's function when it prepares the delete: such a docsync can
    // delete no object at all, which is what it must not do on a hub it does not understand.
    #expect(throws: DatabaseError.self) {
      try older.write { db in try db.execute(sql: "DELETE FROM objects WHERE pack IS NULL") }
    }
    // The hub's own connections delete packed rows as prune and repair need.
    try Self.age([packed.id], in: path)
    try await Self.prune(hub)
    #expect(try Self.rowCount(path) == 0)
  }

  @Test func manyObjectsGoIntoSeveralPacksAndReadBack() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path, packSize: 64 << 10)
    let objects = (0..<300).map { Self.object($0, size: 1_000 + $0 * 37) }
    for start in stride(from: 0, to: objects.count, by: 25) {
      try await hub.putObjects(Array(objects[start..<(start + 25)]))
    }
    // A second put of the same objects writes no bytes.
    let before = hub.packs.totalSize()
    try await hub.putObjects(Array(objects[0..<50]))
    #expect(hub.packs.totalSize() == before)
    #expect(before == Int64(objects.reduce(0) { $0 + $1.data.count }))
    #expect(Self.packFiles(path).count > 3)
    let read = try await hub.objects(objects.map(\.id))
    #expect(read.count == objects.count)
    for object in objects { #expect(read[object.id] == object.data) }
    let inRows = try await DatabaseQueue(path: path).read { db in
      try Int.fetchOne(
        db, sql: "SELECT count(*) FROM objects WHERE pack IS NULL OR length(data) > 0")
    }
    #expect(inRows == 0)
    // Another instance, as another process, reads them too.
    let other = try SQLiteHub(path: path)
    #expect(try await other.objects(objects.map(\.id)).count == objects.count)
  }

  @Test func twoInstancesWriteAtOnceEachIntoItsOwnPacks() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let a = try SQLiteHub(path: path, packSize: 128 << 10)
    let b = try SQLiteHub(path: path, packSize: 128 << 10)
    // Both put a shared part, and a part of their own, in batches that interleave.
    let shared = (0..<60).map { Self.object($0) }
    let ownA = (0..<120).map { Self.object($0, salt: 1) }
    let ownB = (0..<120).map { Self.object($0, salt: 2) }
    func upload(_ hub: SQLiteHub, _ objects: [HubObject]) async throws {
      for start in stride(from: 0, to: objects.count, by: 12) {
        try await hub.putObjects(Array(objects[start..<min(start + 12, objects.count)]))
      }
    }
    async let first: Void = upload(a, shared + ownA)
    async let second: Void = upload(b, shared + ownB)
    _ = try await (first, second)
    let all = shared + ownA + ownB
    for hub in [a, b] {
      let read = try await hub.objects(all.map(\.id))
      #expect(read.count == all.count)
      for object in all { #expect(read[object.id] == object.data) }
    }
    // Each pack holds the bytes of one instance only: those named by its rows are one's own.
    let named = try await DatabaseQueue(path: path).read { db in
      try Row.fetchAll(db, sql: #"SELECT id, pack FROM objects"#).map {
        (Array($0["id"] as Data), $0["pack"] as String)
      }
    }
    let onlyA = Set(ownA.map(\.id))
    let onlyB = Set(ownB.map(\.id))
    let packsOfA = Set(named.filter { onlyA.contains($0.0) }.map(\.1))
    let packsOfB = Set(named.filter { onlyB.contains($0.0) }.map(\.1))
    #expect(!packsOfA.isEmpty && !packsOfB.isEmpty)
    #expect(packsOfA.isDisjoint(with: packsOfB))
    #expect(try Self.rowCount(path) == all.count)
  }

  @Test func objectsStoredBeforePacksAreStillRead() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    // A hub file as the last docsync without packs left it, with an object in its row.
    let queue = try DatabaseQueue(path: path)
    try SQLiteHub.migrator.migrate(queue, upTo: "v5 content objects")
    let old = Self.object(1)
    try await queue.write { db in
      try db.execute(
        sql: #"INSERT INTO objects (id, data, "check", refs, touched) VALUES (?, ?, ?, NULL, ?)"#,
        arguments: [
          Data(old.id), Data(old.data), Data(ObjectCheck.of(old.data)),
          Int64(Date().timeIntervalSince1970),
        ])
    }
    try queue.close()
    let hub = try SQLiteHub(path: path)
    let new = Self.object(2)
    try await hub.putObjects([old, new])
    #expect(try await hub.objects([old.id, new.id]) == [old.id: old.data, new.id: new.data])
    #expect(try Self.place(old.id, in: path)?.pack == nil)
    #expect(try Self.place(new.id, in: path)?.pack != nil)
    // A docsync without packs must refuse this file now (format 2 is packs, 3 chunks taken in
    // place, which came after).
    let needed = try await DatabaseQueue(path: path).read { db in
      try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = 'devices_from'")
    }
    // 2 from this step on; later steps (chunks taken in place, blob twins) raise it.
    #expect((Int(needed ?? "") ?? 0) >= 2)
    #expect(SQLiteHub.format >= 2)
  }

  @Test func aFlippedByteInAPackIsFoundDroppedWantedAndRepairedByAPut() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let objects = (0..<10).map { Self.object($0) }
    try await hub.putObjects(objects)
    let damaged = objects[4]
    let where_ = try #require(try Self.place(damaged.id, in: path))
    let pack = try #require(where_.pack)
    let file = try FileHandle(forUpdating: URL(fileURLWithPath: path + ".packs/" + pack))
    let position = UInt64(try #require(where_.offset)) + 100
    try file.seek(toOffset: position)
    let byte = try #require(try file.read(upToCount: 1))
    try file.seek(toOffset: position)
    try file.write(contentsOf: Data([byte[byte.startIndex] ^ 0x10]))
    try file.close()

    let read = try await hub.objects(objects.map(\.id))
    #expect(read.count == objects.count - 1)
    #expect(read[damaged.id] == nil)
    #expect(try await hub.wantedObjects() == [damaged.id])
    #expect(try Self.place(damaged.id, in: path) == nil)
    #expect(try await hub.missingObjects([damaged.id]) == [damaged.id])
    try await hub.putObjects([damaged])
    #expect(try await hub.wantedObjects().isEmpty)
    #expect(try await hub.objects([damaged.id]) == [damaged.id: damaged.data])
    #expect(try Self.place(damaged.id, in: path)?.offset != where_.offset)
  }

  @Test func pruneRewritesAPackMostlyDeadAndFreesItsSpace() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path, packSize: 256 << 10)
    let objects = (0..<120).map { Self.object($0, size: 8_000) }
    for start in stride(from: 0, to: objects.count, by: 10) {
      try await hub.putObjects(Array(objects[start..<(start + 10)]))
    }
    let packsBefore = Self.packFiles(path)
    let sizeBefore = hub.packs.totalSize()
    #expect(sizeBefore == 120 * 8_000)
    // Two in three go (past their grace, nothing reaches them); the rest were put recently.
    let doomed = objects.enumerated().filter { $0.offset % 3 != 0 }.map(\.element)
    let kept = objects.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
    try Self.age(doomed.map(\.id), in: path)
    try await Self.prune(hub)
    #expect(try Self.rowCount(path) == kept.count)
    let read = try await hub.objects(objects.map(\.id))
    #expect(read.count == kept.count)
    for object in kept { #expect(read[object.id] == object.data) }
    // Every old pack was a third live: each rewritten, and the space is the live bytes'.
    #expect(Set(Self.packFiles(path)).isDisjoint(with: packsBefore))
    #expect(hub.packs.totalSize() == Int64(kept.count * 8_000))
    // Another instance reads the moved objects too.
    let other = try SQLiteHub(path: path)
    #expect(try await other.objects(kept.map(\.id)).count == kept.count)

    // A pack at least half live stays as it is; one with nothing live goes.
    let survivors = Self.packFiles(path)
    try await Self.prune(hub)
    #expect(Self.packFiles(path) == survivors)
    try Self.age(kept.map(\.id), in: path)
    try await Self.prune(hub)
    #expect(try Self.rowCount(path) == 0)
    #expect(Self.packFiles(path).isEmpty)
  }

  /// Each mount appends to packs of its own: months of short sessions would leave thousands
  /// of small files, which a prune copies together.
  @Test func smallPacksOfManySessionsAreCopiedTogether() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    var objects: [HubObject] = []
    for session in 0..<12 {
      let mount = try SQLiteHub(path: path)
      let put = (0..<3).map { Self.object(session * 3 + $0, size: 5_000) }
      try await mount.putObjects(put)
      objects += put
    }
    #expect(Self.packFiles(path).count == 12)
    let hub = try SQLiteHub(path: path)
    try await Self.prune(hub)
    let merged = Self.packFiles(path)
    #expect(merged.count == 1)
    #expect(hub.packs.totalSize() == Int64(objects.count * 5_000))
    let read = try await hub.objects(objects.map(\.id))
    #expect(read.count == objects.count)
    for object in objects { #expect(read[object.id] == object.data) }
    // One small pack alone stays as it is: no prune rewrites it again and again.
    try await Self.prune(hub)
    #expect(Self.packFiles(path) == merged)
  }

  @Test func aPutCutShortBeforeItsCommitLeavesNothingNamedAndItsTailIsReclaimed() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let survivor = Self.object(99, size: 4_000)
    let cut = (0..<5).map { Self.object($0, size: 10_000) }
    do {
      // As a process killed between its pack's fdatasync and the commit: the bytes are on
      // disk, no row names them, and the lock goes with the process.
      let killed = try SQLiteHub(path: path)
      try await killed.putObjects([survivor])
      _ = try killed.packs.append(cut.map(\.data))
    }
    let packs = Self.packFiles(path)
    #expect(packs.count == 1)
    let hub = try SQLiteHub(path: path)
    #expect(try Self.rowCount(path) == 1)
    #expect(try await hub.objects(cut.map(\.id)).isEmpty)
    #expect(try await hub.missingObjects(cut.map(\.id)).count == cut.count)
    #expect(hub.packs.totalSize() == 54_000)
    // The tail is most of the pack: the prune rewrites it, keeping the one named object.
    try await Self.prune(hub)
    #expect(Self.packFiles(path) != packs)
    #expect(hub.packs.totalSize() == 4_000)
    #expect(try await hub.objects([survivor.id]) == [survivor.id: survivor.data])

    // A put cut short in a pack of its own: the whole file goes.
    do {
      let killed = try SQLiteHub(path: path)
      _ = try killed.packs.append(cut.map(\.data))
    }
    #expect(hub.packs.totalSize() == 54_000)
    try await Self.prune(hub)
    #expect(hub.packs.totalSize() == 4_000)
    #expect(try await hub.objects([survivor.id]) == [survivor.id: survivor.data])
  }

  @Test func aPackBeingWrittenIsNeverRewrittenOrRemoved() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let writer = try SQLiteHub(path: path)
    let objects = (0..<4).map { Self.object($0) }
    try await writer.putObjects(objects)
    // Bytes written, not committed yet, in a pack its writer still holds: a prune elsewhere
    // keeps the pack, so the commit to come names bytes that are there.
    _ = try writer.packs.append([Self.object(50).data])
    try Self.age(objects.map(\.id), in: path)
    let pruner = try SQLiteHub(path: path)
    let packs = Self.packFiles(path)
    try await Self.prune(pruner)
    #expect(Self.packFiles(path) == packs)
    #expect(writer.packs.totalSize() == 5 * 6_000)
  }

  @Test func aReaderRacingARewriteGetsTheRightBytes() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let writer = try SQLiteHub(path: path, packSize: 64 << 10)
    let objects = (0..<200).map { Self.object($0, size: 5_000) }
    for start in stride(from: 0, to: objects.count, by: 10) {
      try await writer.putObjects(Array(objects[start..<(start + 10)]))
    }
    let kept = objects.enumerated().filter { $0.offset % 4 == 0 }.map(\.element)
    let reader = try SQLiteHub(path: path)
    // The reader has every pack open: a rewrite removes them under it.
    #expect(try await reader.objects(kept.map(\.id)).count == kept.count)
    try Self.age(
      objects.enumerated().filter { $0.offset % 4 != 0 }.map(\.element.id), in: path)
    let pruned = WatchedWorkTests.Flag()
    let reading = Task {
      var rounds = 0
      var wrong = 0
      // Not cancelled (a cancelled task's reads throw): it stops a few rounds after the prune.
      while !pruned.isSet || rounds < 5 {
        let read = try await reader.objects(kept.map(\.id))
        wrong += kept.filter { read[$0.id] != $0.data }.count
        rounds += 1
        if rounds > 2_000 { break }
      }
      return (rounds, wrong)
    }
    try await Self.prune(writer)
    pruned.set()
    let (rounds, wrong) = try await reading.value
    #expect(rounds >= 5)
    #expect(wrong == 0)
    #expect(writer.packs.totalSize() == Int64(kept.count * 5_000))
    // A reader whose packs are all gone reads the moved rows again.
    #expect(try await reader.objects(kept.map(\.id)).count == kept.count)
    #expect(try await reader.wantedObjects().isEmpty)
  }
}
