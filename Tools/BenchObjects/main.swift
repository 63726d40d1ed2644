// bench-objects fill HUB CHUNKS | prune HUB
//
// The SQLite hub's cost of content objects at scale. `fill` puts CHUNKS chunks of 64 bytes
// under nodes of 64 children, one record per node (as many small versions would), and prints
// the hub's metadata per object: the file's size less the objects' own bytes, divided by their
// number. `prune` then ages every object past its grace period (as a day would) and prunes
// every other record, so that a sweep marks through half the library and deletes the other
// half; it prints the time it took. Run each as its own process under `/usr/bin/time -v` for
// its peak memory: `swift build -c release --product bench-objects`.
import Foundation
import GRDB
import Hub

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("bench-objects: \(message)\n".utf8))
  exit(1)
}

func id(_ text: String) -> [UInt8] { HubHash.sha256(Array(text.utf8)) }

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: bench-objects fill HUB CHUNKS | prune HUB") }
let path = arguments[2]
let clock = ContinuousClock()

switch arguments[1] {
case "fill":
  guard arguments.count == 4, let count = Int(arguments[3]), count > 0 else {
    fail("usage: bench-objects fill HUB CHUNKS")
  }
  let hub = try SQLiteHub(path: path)
  let fanout = 64
  let elapsed = try await clock.measure {
    for first in stride(from: 0, to: count, by: fanout) {
      let chunks = (first..<min(first + fanout, count)).map { index in
        HubObject(id: id("chunk \(index)"), data: [0] + id("data \(index)") + id("more \(index)"))
      }
      let node = HubObject(
        id: id("node \(first)"), data: [0] + chunks.flatMap(\.id), references: chunks.map(\.id))
      try await hub.putObjects(chunks + [node])
      try await hub.append([
        HubRecord(id: id("record \(first)"), payload: Array("\(first)".utf8), blobs: [node.id])
      ])
    }
  }
  let queue = try DatabaseQueue(path: path)
  let (objects, data, size) = try queue.read { db in
    (
      try Int.fetchOne(db, sql: "SELECT count(*) FROM objects")!,
      try Int.fetchOne(db, sql: "SELECT sum(length(data)) FROM objects")!,
      try Int.fetchOne(db, sql: "PRAGMA page_count")! * Int.fetchOne(db, sql: "PRAGMA page_size")!
    )
  }
  print("filled \(objects) objects (\(count) chunks) in \(elapsed)")
  print(
    "hub file \(size >> 20) MiB, objects' bytes \(data >> 20) MiB: "
      + "\((size - data) / objects) bytes of metadata an object (records included)")
case "prune":
  let queue = try DatabaseQueue(path: path)
  let records = try queue.write { db -> [[UInt8]] in
    try db.execute(sql: "UPDATE objects SET touched = touched - 2 * 86400")
    return try Data.fetchAll(db, sql: "SELECT id FROM records ORDER BY seq").map { Array($0) }
  }
  let hub = try SQLiteHub(path: path)
  let doomed = records.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
  let elapsed = try await clock.measure { try await hub.prune(records: doomed) }
  let left = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM objects")! }
  print("pruned \(doomed.count) of \(records.count) records in \(elapsed); \(left) objects left")
default:
  fail("usage: bench-objects fill HUB CHUNKS | prune HUB")
}
