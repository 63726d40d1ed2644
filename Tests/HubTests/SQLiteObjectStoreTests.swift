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
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
          var data = try #require(
            try Data.fetchOne(
              db, sql: "SELECT data FROM objects WHERE id = ?", arguments: [Data(id)]))
          data[data.startIndex + data.count - 1] ^= 0xff
          try db.execute(
            sql: "UPDATE objects SET data = ? WHERE id = ?", arguments: [data, Data(id)])
        }
      })
    let check = try #require(ObjectStoreConformance.checks.first { $0.name == name })
    try await check.run(fixture)
  }
}
