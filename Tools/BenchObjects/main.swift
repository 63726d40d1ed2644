// bench-objects fill HUB CHUNKS | prune HUB [CHUNKS]
//
// A hub's cost of content objects at scale. HUB is a SQLite file or a PostgreSQL hub's URL;
// for PostgreSQL, Tools/bench-objects-postgres.py makes the hub, measures its tables and ages
// its objects (as administrator), and passes CHUNKS to `prune`, which names the records `fill`
// made. `fill` puts CHUNKS chunks of 64 bytes
// under nodes of 64 children, one record per node (as many small versions would), and prints
// the hub's metadata per object: the file's size less the objects' own bytes, divided by their
// number. `prune` then ages every object past its grace period (as a day would) and prunes
// every other record, so that a sweep marks through half the library and deletes the other
// half; it prints the time it took. Run each as its own process under `/usr/bin/time -v` for
// its peak memory: `swift build -c release --product bench-objects`.
import Foundation
import GRDB
import Hub
import PostgresHub

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("bench-objects: \(message)\n".utf8))
  exit(1)
}

func id(_ text: String) -> [UInt8] { HubHash.sha256(Array(text.utf8)) }

let arguments = CommandLine.arguments
let usage = "usage: bench-objects fill HUB CHUNKS | prune HUB [CHUNKS]"
guard arguments.count >= 3 else { fail(usage) }
let path = arguments[2]
let isPostgres = path.hasPrefix("postgres")
let clock = ContinuousClock()
let fanout = 64

/// The ids of the records `fill` made for `count` chunks, in order.
func recordIDs(_ count: Int) -> [[UInt8]] {
  stride(from: 0, to: count, by: fanout).map { id("record \($0)") }
}

switch arguments[1] {
case "fill":
  guard arguments.count == 4, let count = Int(arguments[3]), count > 0 else {
    fail("usage: bench-objects fill HUB CHUNKS")
  }
  let hub = try openAnyHub(location: path)
  guard let objects = hub as? any ObjectStore else { fail("\(path) stores no objects") }
  let elapsed = try await clock.measure {
    for first in stride(from: 0, to: count, by: fanout) {
      let chunks = (first..<min(first + fanout, count)).map { index in
        HubObject(id: id("chunk \(index)"), data: [0] + id("data \(index)") + id("more \(index)"))
      }
      let node = HubObject(
        id: id("node \(first)"), data: [0] + chunks.flatMap(\.id), references: chunks.map(\.id))
      try await objects.putObjects(chunks + [node])
      try await hub.append([
        HubRecord(id: id("record \(first)"), payload: Array("\(first)".utf8), blobs: [node.id])
      ])
    }
  }
  print("filled \(count) chunks under \((count + fanout - 1) / fanout) nodes in \(elapsed)")
  // A PostgreSQL hub's tables are measured by its administrator.
  if isPostgres { exit(0) }
  let queue = try DatabaseQueue(path: path)
  let (stored, data, size) = try queue.read { db in
    (
      try Int.fetchOne(db, sql: "SELECT count(*) FROM objects")!,
      try Int.fetchOne(db, sql: "SELECT sum(length(data)) FROM objects")!,
      try Int.fetchOne(db, sql: "PRAGMA page_count")! * Int.fetchOne(db, sql: "PRAGMA page_size")!
    )
  }
  print(
    "hub file \(size >> 20) MiB, objects' bytes in it (not in packs) \(data >> 20) MiB: "
      + "\((size - data) / stored) bytes of metadata an object (records included)")
case "prune":
  let records: [[UInt8]]
  if isPostgres {
    guard arguments.count == 4, let count = Int(arguments[3]), count > 0 else {
      fail("usage: bench-objects prune POSTGRES-HUB CHUNKS")
    }
    records = recordIDs(count)
  } else {
    let queue = try DatabaseQueue(path: path)
    records = try queue.write { db -> [[UInt8]] in
      try db.execute(sql: "UPDATE objects SET touched = touched - 2 * 86400")
      return try Data.fetchAll(db, sql: "SELECT id FROM records ORDER BY seq").map { Array($0) }
    }
  }
  let hub = try openAnyHub(location: path)
  let doomed = records.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
  // The PostgreSQL hub prunes only real records (old enough, with a later version); these
  // are not, so there every other record is forgotten, which sweeps the same way.
  let elapsed = try await clock.measure {
    if isPostgres {
      try await hub.forget(records: doomed)
    } else {
      try await hub.prune(records: doomed)
    }
  }
  print("pruned \(doomed.count) of \(records.count) records in \(elapsed)")
  if !isPostgres {
    let queue = try DatabaseQueue(path: path)
    let left = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM objects")! }
    print("\(left) objects left")
  }
default:
  fail(usage)
}
