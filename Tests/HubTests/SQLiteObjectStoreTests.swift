import Foundation
import GRDB
import Testing

@testable import Hub

@Suite("SQLiteHub content objects")
struct SQLiteObjectStoreTests {
  @Test(arguments: ObjectStoreConformance.checks.map(\.name))
  func check(_ name: String) async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let fixture = ObjectStoreFixture(
      hub: try SQLiteHub(path: path),
      openAnother: { try SQLiteHub(path: path) },
      ageObjects: {
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
          try db.execute(sql: "UPDATE objects SET touched = touched - 2 * 86400")
        }
      },
      corruptObject: { id in
        // The last byte of its bytes in their pack file.
        let queue = try DatabaseQueue(path: path)
        let row = try #require(
          try queue.read { db in
            try Row.fetchOne(
              db, sql: #"SELECT pack, "offset", length FROM objects WHERE id = ?"#,
              arguments: [Data(id)])
          })
        let pack = try #require(row["pack"] as String?)
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path + ".packs/" + pack))
        defer { try? file.close() }
        let position = UInt64((row["offset"] as Int64) + (row["length"] as Int64) - 1)
        try file.seek(toOffset: position)
        let byte = try #require(try file.read(upToCount: 1))
        try file.seek(toOffset: position)
        try file.write(contentsOf: Data([byte[byte.startIndex] ^ 0xff]))
      })
    let check = try #require(ObjectStoreConformance.checks.first { $0.name == name })
    try await check.run(fixture)
  }
}

@Suite("SQLiteHub objects put before XXH64 checks")
struct SQLiteLegacyObjectCheckTests {
  /// Stores `data` as a hub of session 41 did: 8 bytes of BLAKE2b as its check.
  static func putAsBefore(_ id: [UInt8], _ data: [UInt8], at path: String) async throws {
    let queue = try DatabaseQueue(path: path)
    try await queue.write { db in
      try db.execute(
        sql: #"INSERT INTO objects (id, data, "check", refs, touched) VALUES (?, ?, ?, NULL, ?)"#,
        arguments: [
          Data(id), Data(data), Data(ObjectCheck.blake2b(data)),
          Int64(Date().timeIntervalSince1970),
        ])
    }
  }

  @Test func anIntactOldObjectIsServed() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let id = [UInt8](repeating: 7, count: 32)
    let data = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    try await Self.putAsBefore(id, data, at: path)
    #expect(try await hub.objects([id]) == [id: data])
    #expect(try await hub.wantedObjects().isEmpty)
  }

  @Test func aDamagedOldObjectIsDroppedAndWantedThenPutWithTheNewCheck() async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: path)
    let id = [UInt8](repeating: 9, count: 32)
    let data = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 17) }
    try await Self.putAsBefore(id, data, at: path)
    let queue = try DatabaseQueue(path: path)
    try await queue.write { db in
      var damaged = data
      damaged[1234] ^= 0x40
      try db.execute(
        sql: "UPDATE objects SET data = ? WHERE id = ?", arguments: [Data(damaged), Data(id)])
    }
    #expect(try await hub.objects([id]).isEmpty)
    #expect(try await hub.wantedObjects() == [id])
    try await hub.putObjects([HubObject(id: id, data: data)])
    #expect(try await hub.wantedObjects().isEmpty)
    #expect(try await hub.objects([id]) == [id: data])
    let check = try await queue.read { db in
      try Data.fetchOne(
        db, sql: #"SELECT "check" FROM objects WHERE id = ?"#, arguments: [Data(id)])
    }
    #expect(check.map { Array($0) } == ObjectCheck.of(data))
  }
}
