// Measures computing the library state (current version and conflicts of every path) at 25k,
// 50k and 100k paths with a few hundred conflicts, and checks that it grows about linearly.
// Run in release mode: `swift run -c release bench-model`.
import DocumentModel
import Foundation

func makeRecords(paths count: Int) -> [VersionRecord] {
  var author = VersionAuthor(deviceID: DeviceID(high: 0, low: 1), deviceName: "bench")
  var other = VersionAuthor(deviceID: DeviceID(high: 0, low: 2), deviceName: "other")
  let empty = VersionSet()
  var records: [VersionRecord] = []
  records.reserveCapacity(count * 2)
  for index in 0..<count {
    let path = DocumentPath("dir\(index / 1000)/sub\(index / 100 % 10)/file\(index).txt")
    let bytes = Array("content \(index)".utf8)
    let content = VersionContent.file(
      hash: ContentHash(of: bytes), size: UInt64(bytes.count), executable: false)
    let first = author.record(
      [PendingChange(path: path, content: content, parents: [])], known: empty, now: UInt64(index))[
        0]
    records.append(first)
    let second = author.record(
      [PendingChange(path: path, content: content, parents: [first.id])], known: empty,
      now: UInt64(index))[0]
    records.append(second)
    // One path in 300 has a concurrent version: a few hundred conflicts at 100k paths.
    if index % 300 == 0 {
      records.append(
        other.record(
          [PendingChange(path: path, content: .deletion, parents: [first.id])], known: empty,
          now: UInt64(index))[0])
      records.append(
        other.record(
          [PendingChange(path: path, content: content, parents: [first.id])], known: empty,
          now: UInt64(index))[0])
    }
  }
  return records
}

let clock = ContinuousClock()
let all = makeRecords(paths: 100_000)
var rows: [(paths: Int, records: Int, conflicts: Int, seconds: Double)] = []
for size in [25_000, 50_000, 100_000] {
  let records = Array(all.prefix { Int($0.modified.wallMilliseconds) < size })
  var best = Double.infinity
  var conflicts = 0
  for _ in 0..<3 {
    var state: LibraryState?
    let elapsed = clock.measure {
      state = LibraryState(VersionSet(records))
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    best = min(best, seconds)
    conflicts = state!.conflicts.count
  }
  rows.append((size, records.count, conflicts, best))
}

print("paths     records   conflicts   seconds   µs/path")
for row in rows {
  let perPath = row.seconds / Double(row.paths) * 1e6
  print(
    "\(row.paths)".padding(10) + "\(row.records)".padding(10) + "\(row.conflicts)".padding(12)
      + String(row.seconds, digits: 4).padding(10) + String(perPath, digits: 2))
}
let ratio = rows[2].seconds / rows[0].seconds
print("100k / 25k time ratio: \(String(ratio, digits: 2)) (linear: 4.0)")
if ratio > 6.0 {
  print("FAIL: state computation grows faster than linearly")
  exit(1)
}

extension String {
  func padding(_ width: Int) -> String {
    self + String(repeating: " ", count: max(1, width - count))
  }
  init(_ value: Double, digits: Int) {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    self = "\(rounded)"
  }
}
