import Foundation
import GRDB
import Testing

@testable import Hub

/// Large blobs as files beside the hub (`<hub>.blobs/<hash>`).
@Suite("SQLiteHub blob files")
struct SQLiteHubBlobFileTests {
  static let large = Int(SQLiteHub.fileThreshold) * 40 + 7

  @Test(arguments: [false, true])
  func aLargeBlobIsAFileAndComesBack(checked: Bool) async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let bytes = pseudoRandomBytes(count: Self.large, seed: 1)
    let hash = HubHash.sha256(bytes)
    let file = try TemporaryFile(bytes)
    try await hub.putBlob(hash: hash, from: file.descriptor, checked: checked)
    #expect(try await hub.hasBlob(hash: hash))
    #expect(try fileSize(hubPath + ".blobs/" + hexString(hash)) == bytes.count)
    // Its bytes are not in the hub file as well.
    let chunks = try await DatabaseQueue(path: hubPath).read { db in
      try Int.fetchOne(db, sql: "SELECT count(*) FROM chunks") ?? -1
    }
    #expect(chunks == 0)
    #expect(try await fetchBlob(SQLiteHub(path: hubPath), hash) == bytes)
    // Nothing else is left in the folder: no temporary file.
    #expect(try blobFolderNames(hubPath) == [hexString(hash)])
    // A small blob stays in the hub file.
    let small = try await putBlob(hub, pseudoRandomBytes(count: 4000, seed: 2))
    #expect(try blobFolderNames(hubPath) == [hexString(hash)])
    #expect(try await fetchBlob(hub, small).count == 4000)
  }

  @Test func aWrongPutLeavesNoFile() async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let bytes = pseudoRandomBytes(count: Self.large, seed: 3)
    var claimed = HubHash.sha256(bytes)
    claimed[0] ^= 1
    let file = try TemporaryFile(bytes)
    await #expect(throws: HubError.self) {
      try await hub.putBlob(hash: claimed, from: file.descriptor)
    }
    #expect(try blobFolderNames(hubPath).isEmpty)
    #expect(try await !hub.hasBlob(hash: claimed))
  }

  /// A byte flipped in a blob's file on the hub's disk is caught by the fetch, and a report
  /// of the damage drops the file and asks the devices for the blob again.
  @Test func aDamagedFileIsRefusedOnFetchAndDropped() async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let bytes = pseudoRandomBytes(count: Self.large, seed: 4)
    let hash = try await putBlob(hub, bytes)
    try await hub.append([makeRecord("a", blobs: [hash])])
    let path = hubPath + ".blobs/" + hexString(hash)
    let handle = try #require(FileHandle(forUpdatingAtPath: path))
    try handle.seek(toOffset: UInt64(Self.large / 2))
    try handle.write(contentsOf: [0x55])
    try handle.close()
    await #expect {
      _ = try await fetchBlob(hub, hash)
    } throws: { isIntegrityError($0) }
    #expect(try await hub.reportDamagedBlob(hash: hash) == .wanted)
    #expect(!FileManager.default.fileExists(atPath: path))
    #expect(try await hub.wantedBlobs() == [hash])
    _ = try await putBlob(hub, bytes)
    #expect(try await hub.wantedBlobs().isEmpty)
    #expect(try await fetchBlob(hub, hash) == bytes)
  }

  /// A row whose file went missing is an integrity failure, which the device reports.
  @Test func aMissingFileIsReportedAndWanted() async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let hash = try await putBlob(hub, pseudoRandomBytes(count: Self.large, seed: 5))
    try await hub.append([makeRecord("a", blobs: [hash])])
    #expect(unlink(hubPath + ".blobs/" + hexString(hash)) == 0)
    await #expect {
      _ = try await fetchBlob(hub, hash)
    } throws: { isIntegrityError($0) }
    #expect(try await hub.reportDamagedBlob(hash: hash) == .wanted)
    #expect(try await !hub.hasBlob(hash: hash))
  }

  @Test func pruneAndForgetRemoveTheFiles() async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let pruned = try await putBlob(hub, pseudoRandomBytes(count: Self.large, seed: 6))
    let forgotten = try await putBlob(hub, pseudoRandomBytes(count: Self.large, seed: 7))
    let shared = try await putBlob(hub, pseudoRandomBytes(count: Self.large, seed: 8))
    let a = makeRecord("a", blobs: [pruned, shared])
    let b = makeRecord("b", blobs: [forgotten])
    let c = makeRecord("c", blobs: [shared])
    try await hub.append([a, b, c])
    #expect(try blobFolderNames(hubPath).count == 3)
    try await hub.prune(records: [a.id])
    #expect(try blobFolderNames(hubPath) == [hexString(shared), hexString(forgotten)].sorted())
    try await hub.forget(records: [b.id])
    #expect(try blobFolderNames(hubPath) == [hexString(shared)])
    #expect(try await !hub.hasBlob(hash: pruned))
    #expect(try await !hub.hasBlob(hash: forgotten))
    #expect(try await fetchBlob(hub, shared).count == Self.large)
  }

  /// What a crash leaves in the folder (a temporary file, a file no row names) goes once it
  /// is old, the temporary file when a hub opens, the orphan when one prunes; recorded files and
  /// young files (a put in progress) stay.
  @Test func orphansAreSweptWhenOld() async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let kept = try await putBlob(hub, pseudoRandomBytes(count: Self.large, seed: 9))
    let blobs = hubPath + ".blobs/"
    let orphan = hexString(HubHash.sha256(Array("orphan".utf8)))
    let young = hexString(HubHash.sha256(Array("young".utf8)))
    let temporary = BlobFolder.temporaryPrefix + "abc-1"
    for name in [orphan, young, temporary, "notes.txt"] {
      #expect(FileManager.default.createFile(atPath: blobs + name, contents: Data([1, 2, 3])))
    }
    let old = Date(timeIntervalSinceNow: -2 * 86_400)
    for name in [orphan, temporary, hexString(kept), "notes.txt"] {
      try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: blobs + name)
    }
    // Opening the hub sweeps old temporary files; an old orphan waits for a prune's sweep.
    _ = try SQLiteHub(path: hubPath)
    #expect(
      try blobFolderNames(hubPath) == [hexString(kept), orphan, young, "notes.txt"].sorted())
    await hub.sweepBlobFiles(olderThan: 0)
    #expect(try blobFolderNames(hubPath) == [hexString(kept), "notes.txt"].sorted())
    #expect(try await fetchBlob(hub, kept).count == Self.large)
  }

  /// Two hubs on one file (as two mounts are) putting the same large blob at once end with
  /// one row, one good file and nothing left over.
  @Test func twoHubsPuttingOneBlobAtOnce() async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let bytes = pseudoRandomBytes(count: 8 << 20, seed: 10)
    let hash = HubHash.sha256(bytes)
    for round in 0..<4 {
      let hubs = try (0..<3).map { _ in try SQLiteHub(path: hubPath) }
      if round > 0 {
        try await hubs[0].append([makeRecord("r\(round)", blobs: [hash])])
        try await hubs[0].forget(records: [makeRecord("r\(round)", blobs: [hash]).id])
      }
      #expect(try await !hubs[0].hasBlob(hash: hash))
      try await withThrowingTaskGroup(of: Void.self) { group in
        for (index, hub) in hubs.enumerated() {
          group.addTask {
            let file = try TemporaryFile(bytes)
            try await hub.putBlob(hash: hash, from: file.descriptor, checked: index == 1)
          }
        }
        try await group.waitForAll()
      }
      #expect(try blobFolderNames(hubPath) == [hexString(hash)])
      #expect(try await fetchBlob(hubs[2], hash) == bytes)
      let rows = try await DatabaseQueue(path: hubPath).read { db in
        try Int.fetchOne(db, sql: "SELECT count(*) FROM uploads") ?? -1
      }
      #expect(rows == 1)
    }
  }

  /// A hub from before blob files keeps its chunked blobs readable, and checkable.
  @Test func anOldChunkedBlobIsStillRead() async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let bytes = pseudoRandomBytes(count: 3 * SQLiteHub.chunkSize + 11, seed: 12)
    let hash = HubHash.sha256(bytes)
    // As the chunked put wrote every blob before this migration.
    try await hub.pool.write { db in
      try db.execute(
        sql: "INSERT INTO uploads (hash, started) VALUES (?, 0)", arguments: [Data(hash)])
      let upload = db.lastInsertedRowID
      for index in 0..<4 {
        let start = index * SQLiteHub.chunkSize
        let chunk = Data(bytes[start..<min(bytes.count, start + SQLiteHub.chunkSize)])
        try db.execute(
          sql: #"INSERT INTO chunks (upload, "index", data) VALUES (?, ?, ?)"#,
          arguments: [upload, index, chunk])
      }
      try db.execute(
        sql: "INSERT INTO blobs (hash, size, upload) VALUES (?, ?, ?)",
        arguments: [Data(hash), bytes.count, upload])
    }
    #expect(try await fetchBlob(SQLiteHub(path: hubPath), hash) == bytes)
    #expect(try await hub.reportDamagedBlob(hash: hash) == .intact)
    // Put again: still the one chunked copy, no file.
    _ = try await putBlob(hub, bytes)
    #expect(try blobFolderNames(hubPath).isEmpty)
    try await hub.append([makeRecord("a", blobs: [hash])])
    try await hub.forget(records: [makeRecord("a").id])
    #expect(try await !hub.hasBlob(hash: hash))
  }
  /// A file handed over is renamed into the blob folder (the same inode, gone from where it
  /// was), recorded, and read back whole; checked or not.
  @Test(arguments: [false, true])
  func anAdoptedFileIsMovedAndRecorded(checked: Bool) async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let bytes = pseudoRandomBytes(count: Self.large, seed: 11)
    let hash = HubHash.sha256(bytes)
    let (path, descriptor) = try Self.file(in: folder.path, bytes)
    defer { close(descriptor) }
    var before = stat()
    #expect(fstat(descriptor, &before) == 0)
    #expect(
      try await hub.adoptBlob(hash: hash, file: path, descriptor: descriptor, checked: checked))
    #expect(!FileManager.default.fileExists(atPath: path))
    var after = stat()
    #expect(stat(hubPath + ".blobs/" + hexString(hash), &after) == 0)
    #expect(after.st_ino == before.st_ino)
    #expect(try await hub.hasBlob(hash: hash))
    #expect(try await fetchBlob(SQLiteHub(path: hubPath), hash) == bytes)
    #expect(try blobFolderNames(hubPath) == [hexString(hash)])
  }

  /// An unchecked file whose bytes are not its name is refused and stays where it was; a small
  /// one is not taken (it belongs in the hub file), nor one the hub already has.
  @Test func whatTheHubDoesNotAdoptStaysWhereItWas() async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let bytes = pseudoRandomBytes(count: Self.large, seed: 12)
    var claimed = HubHash.sha256(bytes)
    claimed[0] ^= 1
    let (path, descriptor) = try Self.file(in: folder.path, bytes)
    defer { close(descriptor) }
    await #expect {
      _ = try await hub.adoptBlob(hash: claimed, file: path, descriptor: descriptor, checked: false)
    } throws: { isIntegrityError($0) }
    #expect(FileManager.default.fileExists(atPath: path))
    #expect(try blobFolderNames(hubPath).isEmpty)

    let small = pseudoRandomBytes(count: 4000, seed: 13)
    let (smallPath, smallDescriptor) = try Self.file(in: folder.path, small, name: "small")
    defer { close(smallDescriptor) }
    #expect(
      try await !hub.adoptBlob(
        hash: HubHash.sha256(small), file: smallPath, descriptor: smallDescriptor, checked: true))
    #expect(FileManager.default.fileExists(atPath: smallPath))

    let hash = try await putBlob(hub, bytes)
    #expect(try await hub.adoptBlob(hash: hash, file: path, descriptor: descriptor, checked: true))
    #expect(FileManager.default.fileExists(atPath: path))
  }

  /// A crash between the rename and the row leaves a file no row names: recovering checks it
  /// and records it when whole, and refuses a damaged one.
  @Test func aHandOverCutShortIsRecovered() async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let bytes = pseudoRandomBytes(count: Self.large, seed: 14)
    let hash = HubHash.sha256(bytes)
    let (_, descriptor) = try Self.file(in: hubPath + ".blobs", bytes, name: hexString(hash))
    close(descriptor)
    #expect(try await !hub.hasBlob(hash: hash))
    #expect(try await hub.recoverBlob(hash: hash))
    #expect(try await fetchBlob(hub, hash) == bytes)

    var damaged = pseudoRandomBytes(count: Self.large, seed: 15)
    let damagedHash = HubHash.sha256(damaged)
    damaged[7] ^= 1
    let (_, other) = try Self.file(in: hubPath + ".blobs", damaged, name: hexString(damagedHash))
    close(other)
    #expect(try await !hub.recoverBlob(hash: damagedHash))
    #expect(try await !hub.hasBlob(hash: damagedHash))
  }

  /// A file with `bytes` in `folder`, open for reading, and its path.
  private static func file(in folder: String, _ bytes: [UInt8], name: String = "blob") throws
    -> (String, Int32)
  {
    let path = folder + "/" + name
    #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    return (path, descriptor)
  }
}

func fileSize(_ path: String) throws -> Int {
  try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
}

func blobFolderNames(_ hubPath: String) throws -> [String] {
  try FileManager.default.contentsOfDirectory(atPath: hubPath + ".blobs").sorted()
}
