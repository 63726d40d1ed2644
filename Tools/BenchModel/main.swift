// Measures computing the library state (current version and conflicts of every path) at 25k,
// 50k and 100k paths with a few hundred conflicts, and recording one quiet window of 2.5k to
// 20k renames (`SaveCoalescer`, what an unmount records last), and checks that both grow about
// linearly.
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
    // One path in 300 has a concurrent version: a few hundred conflicts at 100k paths. Its
    // content differs: a concurrent save of the same bytes is no conflict.
    if index % 300 == 0 {
      let otherBytes = Array("other content \(index)".utf8)
      let otherContent = VersionContent.file(
        hash: ContentHash(of: otherBytes), size: UInt64(otherBytes.count), executable: false)
      records.append(
        other.record(
          [PendingChange(path: path, content: .deletion, parents: [first.id])], known: empty,
          now: UInt64(index))[0])
      records.append(
        other.record(
          [PendingChange(path: path, content: otherContent, parents: [first.id])],
          known: empty, now: UInt64(index))[0])
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

/// One quiet window in which `count` files (in folders of 1,000) are each renamed once, as
/// `git checkout` or a script does: what the window showed before, and holds after.
func renameWindow(_ count: Int) -> (
  [LocalOperation], [DocumentPath: VersionRecord], [DocumentPath: VersionContent]
) {
  var author = VersionAuthor(deviceID: DeviceID(high: 0, low: 1), deviceName: "bench")
  var operations: [LocalOperation] = []
  var before: [DocumentPath: VersionRecord] = [:]
  var after: [DocumentPath: VersionContent] = [:]
  for index in 0..<count {
    let from = DocumentPath("dir\(index / 1000)/old\(index).txt")
    let to = DocumentPath("dir\(index / 1000)/new\(index).txt")
    let bytes = Array("content \(index)".utf8)
    let content = VersionContent.file(
      hash: ContentHash(of: bytes), size: UInt64(bytes.count), executable: false)
    before[from] =
      author.record(
        [PendingChange(path: from, content: content, parents: [])], known: VersionSet(),
        now: UInt64(index))[0]
    after[to] = content
    operations.append(.rename(from: from, to: to))
  }
  return (operations, before, after)
}

var windowRows: [(renames: Int, seconds: Double)] = []
for size in [2_500, 5_000, 10_000, 20_000] {
  let (operations, before, after) = renameWindow(size)
  var best = Double.infinity
  for _ in 0..<3 {
    var changes = 0
    let elapsed = clock.measure {
      changes = SaveCoalescer.changes(operations: operations, before: before, after: after).count
    }
    precondition(changes == 2 * size, "a rename is a deletion and a new version")
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    best = min(best, seconds)
  }
  windowRows.append((size, best))
}
print("")
print("renames in one window   seconds   µs/rename")
for row in windowRows {
  print(
    "\(row.renames)".padding(24) + String(row.seconds, digits: 4).padding(10)
      + String(row.seconds / Double(row.renames) * 1e6, digits: 2))
}
let windowRatio = windowRows[3].seconds / windowRows[0].seconds
// Sorting the touched paths adds a log factor (about 10 here); quadratic would be 64.
print("20k / 2.5k renames time ratio: \(String(windowRatio, digits: 2)) (linear: 8.0)")
if ratio > 6.0 {
  print("FAIL: state computation grows faster than linearly")
  exit(1)
}
if windowRatio > 20.0 {
  print("FAIL: recording a window grows faster than linearly with its renames")
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
