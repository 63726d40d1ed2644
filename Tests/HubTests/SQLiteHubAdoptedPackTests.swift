import Foundation
import GRDB
import Testing

@testable import Hub

/// Chunks taken in place: a device's file becomes one of the hub's packs by a hard link, each
/// chunk's row keeping its raw frame's byte. Read back, damage, prune, a file the hub cannot
/// take, and a chunk the file does not hold.
@Suite("SQLiteHub chunks taken in place")
struct SQLiteHubAdoptedPackTests {
  /// A file of `count` pseudo-random chunks of `size` bytes at `path`, open for reading, and
  /// the chunks as the hub would name them.
  static func file(_ path: String, count: Int, size: Int = 50_000, salt: UInt8 = 0) throws
    -> (descriptor: Int32, chunks: [AdoptedChunk], bytes: [[UInt8]])
  {
    let objects = (0..<count).map { SQLiteHubPackTests.object($0, size: size, salt: salt) }
    #expect(FileManager.default.createFile(atPath: path, contents: Data(objects.flatMap(\.data))))
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    #expect(descriptor >= 0)
    let chunks = objects.enumerated().map { index, object in
      AdoptedChunk(id: object.id, offset: Int64(index * size), length: size)
    }
    return (descriptor, chunks, objects.map(\.data))
  }

  /// A file of `count` chunks beside the hub at `path`, taken in place.
  static func adopted(_ hub: SQLiteHub, beside path: String, count: Int) async throws
    -> (blob: String, descriptor: Int32, chunks: [AdoptedChunk], bytes: [[UInt8]])
  {
    let blob = path + ".blob"
    let (descriptor, chunks, bytes) = try file(blob, count: count)
    #expect(
      try await hub.adoptChunks(
        file: blob, descriptor: descriptor, chunks: chunks, framePrefix: [0]))
    return (blob, descriptor, chunks, bytes)
  }

  static func links(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_nlink) : -1
  }

  @Test func aFileTakenInPlaceReadsBackAsRawFramesAndIsOneLinkedPack() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let (blob, descriptor, chunks, bytes) = try await Self.adopted(
      hub, beside: path, count: 20)
    defer { close(descriptor) }
    // The device keeps its name; the hub's pack is the same file, not a copy.
    #expect(Self.links(blob) == 2)
    #expect(SQLiteHubPackTests.packFiles(path).count == 1)
    #expect(try await hub.missingObjects(chunks.map(\.id)).isEmpty)
    let read = try await hub.objects(chunks.map(\.id))
    for (chunk, plain) in zip(chunks, bytes) { #expect(read[chunk.id] == [0] + plain) }
    // A node over them goes in as usual.
    let node = HubObject(
      id: HubHash.sha256([1, 2, 3]), data: [9, 9, 9], references: chunks.map(\.id))
    try await hub.putObjects([node])
    #expect(try await hub.objects([node.id]) == [node.id: node.data])
    // The hub file says that a docsync of format 2 cannot read it.
    let setting = try await DatabaseQueue(path: path).read { db in
      try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = 'devices_from'")
    }
    // 3 from this step on; a later one (v8 blob twins) raises it.
    #expect((Int(setting ?? "") ?? 0) >= 3)
  }

  @Test func chunksTheHubHasAlreadyLeaveNoPackBehind() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let blob = folder.path + "/blob"
    let (descriptor, chunks, bytes) = try Self.file(blob, count: 4)
    defer { close(descriptor) }
    try await hub.putObjects(
      zip(chunks, bytes).map { HubObject(id: $0.0.id, data: [0] + $0.1) })
    let packs = SQLiteHubPackTests.packFiles(path)
    #expect(
      try await hub.adoptChunks(
        file: blob, descriptor: descriptor, chunks: chunks, framePrefix: [0]))
    #expect(SQLiteHubPackTests.packFiles(path) == packs)
    #expect(Self.links(blob) == 1)
  }

  @Test func aChunkOutsideItsFileIsRefusedAndNothingStays() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let blob = folder.path + "/blob"
    let (descriptor, chunks, _) = try Self.file(blob, count: 3)
    defer { close(descriptor) }
    let beyond = chunks + [AdoptedChunk(id: HubHash.sha256([7]), offset: 149_999, length: 2)]
    await #expect(throws: HubError.self) {
      try await hub.adoptChunks(
        file: blob, descriptor: descriptor, chunks: beyond, framePrefix: [0])
    }
    #expect(SQLiteHubPackTests.packFiles(path).isEmpty)
    #expect(try SQLiteHubPackTests.rowCount(path) == 0)
    #expect(Self.links(blob) == 1)
  }

  @Test func aFileOnAnotherFileSystemIsNotTakenAndTheCallerPutsIt() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    // /dev/shm is a tmpfs: never the file system of /var/tmp.
    let blob = "/dev/shm/docsync-adopt-\(UUID().uuidString)"
    defer { unlink(blob) }
    let (descriptor, chunks, _) = try Self.file(blob, count: 2)
    defer { close(descriptor) }
    #expect(
      try await !hub.adoptChunks(
        file: blob, descriptor: descriptor, chunks: chunks, framePrefix: [0]))
    #expect(try SQLiteHubPackTests.rowCount(path) == 0)
    #expect(SQLiteHubPackTests.packFiles(path).isEmpty)
  }

  @Test func aFlippedByteInTheFileIsFoundDroppedAndWanted() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let (_, descriptor, chunks, bytes) = try await Self.adopted(
      hub, beside: path, count: 3)
    defer { close(descriptor) }
    // One byte of the second chunk, through the pack's name.
    let pack = path + ".packs/" + SQLiteHubPackTests.packFiles(path)[0]
    let writer = open(pack, O_WRONLY)
    var flipped = bytes[1][10] ^ 0xFF
    #expect(pwrite(writer, &flipped, 1, off_t(chunks[1].offset + 10)) == 1)
    close(writer)
    let read = try await hub.objects(chunks.map(\.id))
    #expect(read[chunks[0].id] == [0] + bytes[0] && read[chunks[2].id] == [0] + bytes[2])
    #expect(read[chunks[1].id] == nil)
    #expect(try await hub.wantedObjects() == [chunks[1].id])
    // A put of a good copy ends the want, into an ordinary pack.
    try await hub.putObjects([HubObject(id: chunks[1].id, data: [0] + bytes[1])])
    #expect(try await hub.objects([chunks[1].id]) == [chunks[1].id: [0] + bytes[1]])
    #expect(try await hub.wantedObjects().isEmpty)
  }

  /// The chunks of `file` with the checks a device computed as it wrote them (`bytes`).
  static func withChecks(_ chunks: [AdoptedChunk], _ bytes: [[UInt8]]) -> [AdoptedChunk] {
    zip(chunks, bytes).map { chunk, plain in
      AdoptedChunk(
        id: chunk.id, offset: chunk.offset, length: chunk.length,
        frameHash: plain.withUnsafeBytes { AdoptedChunk.frameHash(prefix: [0], bytes: $0) })
    }
  }

  /// The hub's stored check of each of `chunks`.
  static func storedChecks(_ path: String, _ chunks: [AdoptedChunk]) async throws -> [[UInt8]] {
    try await DatabaseQueue(path: path).read { db in
      try chunks.map { chunk in
        let check = try Data.fetchOne(
          db, sql: #"SELECT "check" FROM objects WHERE id = ?"#, arguments: [Data(chunk.id)])
        return Array(check ?? Data())
      }
    }
  }

  @Test func checksTheDeviceMadeAsItWroteAreKeptAndDamageIsStillFound() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let blob = folder.path + "/blob"
    let (descriptor, plain, bytes) = try Self.file(blob, count: 20)
    defer { close(descriptor) }
    let chunks = Self.withChecks(plain, bytes)
    // A chunk outside the hub's sample (0, 6, 12, 19) changes after the device checked it:
    // the hub takes the device's checks without reading every chunk, and its read finds it.
    let writer = open(blob, O_WRONLY)
    var flipped = bytes[3][10] ^ 0xFF
    #expect(pwrite(writer, &flipped, 1, off_t(chunks[3].offset + 10)) == 1)
    close(writer)
    #expect(
      try await hub.adoptChunks(
        file: blob, descriptor: descriptor, chunks: chunks, framePrefix: [0])
    )
    #expect(
      try await Self.storedChecks(path, chunks)
        == chunks.map { ObjectCheck.xxHash64($0.frameHash!) })
    let read = try await hub.objects(chunks.map(\.id))
    #expect(read[chunks[3].id] == nil)
    for index in [0, 1, 2, 4, 19] { #expect(read[chunks[index].id] == [0] + bytes[index]) }
    #expect(try await hub.wantedObjects() == [chunks[3].id])
  }

  @Test func aSampledCheckThatDoesNotMatchMakesTheHubCheckEveryChunk() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let blob = folder.path + "/blob"
    let (descriptor, plain, bytes) = try Self.file(blob, count: 8)
    defer { close(descriptor) }
    var chunks = Self.withChecks(plain, bytes)
    // The device's check of the first chunk is wrong (a bug, not the disk): the hub makes its
    // own of every chunk, and every chunk reads back.
    chunks[0] = AdoptedChunk(
      id: chunks[0].id, offset: chunks[0].offset, length: chunks[0].length,
      frameHash: 0)
    #expect(
      try await hub.adoptChunks(
        file: blob, descriptor: descriptor, chunks: chunks, framePrefix: [0])
    )
    let own = Self.withChecks(plain, bytes).map { ObjectCheck.xxHash64($0.frameHash!) }
    #expect(try await Self.storedChecks(path, chunks) == own)
    let read = try await hub.objects(chunks.map(\.id))
    for (chunk, plain) in zip(chunks, bytes) { #expect(read[chunk.id] == [0] + plain) }
    #expect(try await hub.wantedObjects().isEmpty)
  }

  @Test func pruneMovesWhatLivesOutOfAMostlyDeadFileAndLetsItsNameGo() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let (blob, descriptor, chunks, bytes) = try await Self.adopted(
      hub, beside: path, count: 10)
    defer { close(descriptor) }
    // Nine of ten past their grace, named by no record: swept, and the file rewritten.
    try SQLiteHubPackTests.age(chunks.dropFirst().map(\.id), in: path)
    try await SQLiteHubPackTests.prune(hub)
    #expect(try SQLiteHubPackTests.rowCount(path) == 1)
    #expect(Self.links(blob) == 1, "the hub's name of the file is gone")
    #expect(try await hub.objects([chunks[0].id]) == [chunks[0].id: [0] + bytes[0]])
    // The device's file is untouched.
    let kept = try Data(contentsOf: URL(fileURLWithPath: blob))
    #expect(kept == Data(bytes.joined()))
  }
}
