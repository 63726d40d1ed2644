import DocumentModel
import Foundation
import Hub
import Testing

/// What a conformance check gets: the hub under test and the few things only its kind can do.
struct HubFixture: Sendable {
  /// A fresh, empty hub.
  let hub: any Hub
  /// A second, independent handle on the same hub, as another process or device would have.
  let openAnother: @Sendable () throws -> any Hub
  /// Damages the stored bytes of a blob behind the hub's back, as a failing disk would.
  let corruptBlob: @Sendable (_ hash: [UInt8]) async throws -> Void
  /// Deletes a blob behind the hub's back, as a botched restore would.
  let loseBlob: @Sendable (_ hash: [UInt8]) async throws -> Void
}

/// One suite of checks over any hub, so that every kind of hub is held to the same rules.
enum HubConformance {
  typealias Check = @Sendable (HubFixture) async throws -> Void

  static let checks: [(name: String, run: Check)] = [
    ("idempotent appends", idempotentAppends),
    ("a known id with another payload is refused", conflictingPayloadRefused),
    ("blobs before the records that name them", blobsBeforeRecords),
    ("a refused batch appends nothing", refusedBatchAppendsNothing),
    ("paging with small limits sees each record once, in order", pagingSeesEachRecordOnce),
    ("a persisted cursor resumes", persistedCursorResumes),
    ("a write through another handle wakes waitForChanges", notificationLatency),
    ("waitForChanges times out when nothing changes", waitTimesOut),
    ("a multi-chunk blob round-trips", multiChunkBlobRoundTrip),
    ("an empty blob round-trips", emptyBlobRoundTrip),
    ("a blob that does not match its hash is refused", corruptPutRefused),
    ("a blob damaged in storage is detected on fetch", corruptFetchDetected),
    ("a missing blob is reported", missingBlobReported),
    ("a failure of the caller's own file is the caller's, not the hub's", callersFileFails),
    (
      "small blobs put together read back, and one under a wrong key is never stored", putSmallBlobs
    ),
    (
      "small blobs read together are each right, and never a missing, large or damaged one",
      smallBlobs
    ),
    ("a damaged blob reported is dropped, wanted, then put again", damagedBlobIsRepaired),
    ("a good blob reported stays", goodBlobReportedStays),
    ("a report of a blob nobody names changes nothing", unknownBlobReported),
    ("a replacement must hash to its key", badReplacementRefused),
    ("a lost blob that a record names is wanted", lostBlobIsWanted),
    ("retention is kept, and pruning removes records and the blobs only they named", pruning),
    ("forgetting removes records and their blobs; erasures list what went", forgetting),
    ("a wanted blob that pruning releases is wanted no more", prunedBlobIsNotWanted),
    // Batched small blobs: HubConformance+SmallBlobs.swift.
    (
      "a batch of small blobs stores each good one, keeps one there, refuses a wrong key",
      smallBatch
    ),
    ("an empty batch stores and reads nothing", emptyBatches),
    ("two handles putting one batch at once both end with every blob", racingBatches),
    ("a wanted blob put in a batch is wanted no more", wantedBlobPutInBatch),
    ("small blobs read together are the good ones up to the limit, in any chunks", exactRead),
  ]

  static func idempotentAppends(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let blob = try await putBlob(hub, Array("hello".utf8))
    let record = makeRecord("a", blobs: [blob])
    try await hub.append([record])
    try await hub.append([record])
    try await hub.append([record, record])
    try await fixture.openAnother().append([record])
    let all = try await allRecords(hub)
    #expect(all == [record])
  }

  static func conflictingPayloadRefused(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let record = makeRecord("a")
    try await hub.append([record])
    var forged = record
    forged.payload = Array("something else".utf8)
    await #expect(throws: HubError.self) { try await hub.append([forged]) }
    #expect(try await allRecords(hub) == [record])
  }

  static func blobsBeforeRecords(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let content = Array("the content".utf8)
    let hash = HubHash.sha256(content)
    let record = makeRecord("a", blobs: [hash])
    await #expect(throws: HubError.missingBlob(hash)) { try await hub.append([record]) }
    #expect(try await allRecords(hub).isEmpty)
    _ = try await putBlob(hub, content)
    try await hub.append([record])
    #expect(try await allRecords(hub) == [record])
  }

  static func refusedBatchAppendsNothing(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let present = try await putBlob(hub, Array("present".utf8))
    let absent = HubHash.sha256(Array("absent".utf8))
    let batch = [makeRecord("a", blobs: [present]), makeRecord("b", blobs: [present, absent])]
    await #expect(throws: HubError.missingBlob(absent)) { try await hub.append(batch) }
    #expect(try await allRecords(hub).isEmpty)
  }

  static func pagingSeesEachRecordOnce(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let shared = try await putBlob(hub, Array("shared".utf8))
    var appended: [HubRecord] = []
    for batch in 0..<6 {
      let records = (0..<batch).map {
        makeRecord("r\(batch).\($0)", blobs: $0 % 2 == 0 ? [shared] : [])
      }
      try await hub.append(records)
      appended += records
    }
    for limit in [1, 2, 3, 7, 100] {
      var cursor = HubCursor.start
      var seen: [HubRecord] = []
      while true {
        let page = try await hub.records(after: cursor, limit: limit)
        #expect(page.records.count <= limit)
        if page.records.isEmpty {
          #expect(page.cursor == cursor)
          break
        }
        seen += page.records
        cursor = page.cursor
      }
      #expect(seen == appended, "limit \(limit)")
    }
  }

  static func persistedCursorResumes(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let first = (0..<5).map { makeRecord("first \($0)") }
    try await hub.append(first)
    let page = try await hub.records(after: .start, limit: 3)
    #expect(page.records == Array(first.prefix(3)))

    // Persist both stable forms, as a sync engine would, and resume on another handle.
    let json = try JSONEncoder().encode(page.cursor)
    let text = page.cursor.serialized
    let later = (0..<4).map { makeRecord("later \($0)") }
    try await hub.append(later)
    let other = try fixture.openAnother()
    let fromJSON = try JSONDecoder().decode(HubCursor.self, from: json)
    #expect(fromJSON == page.cursor)
    let rest = try await allRecords(other, after: fromJSON)
    #expect(rest == Array(first.dropFirst(3)) + later)
    #expect(try await allRecords(other, after: HubCursor(serialized: text)) == rest)
  }

  static func notificationLatency(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let writer = try fixture.openAnother()
    var latencies: [Duration] = []
    for round in 0..<8 {
      let cursor = try await endCursor(hub)
      let clock = ContinuousClock()
      // The timeout only bounds a failure: a woken waiter returns at once. With 10 s the wait
      // once returned false under a full run beside a bench; the one way it can is a look at
      // the records that began before the write and ended past the deadline (this suite shares
      // the process's two cooperative threads with every other suite).
      let waiter = Task { () async throws -> (Bool, ContinuousClock.Instant) in
        let changed = try await hub.waitForChanges(after: cursor, timeout: .seconds(30))
        return (changed, clock.now)
      }
      // Vary the moment within the polling period.
      try await Task.sleep(for: .milliseconds(60 + 7 * round))
      try await writer.append([makeRecord("wake \(round)")])
      let written = clock.now
      let (changed, woke) = try await waiter.value
      #expect(changed)
      latencies.append(max(.zero, written.duration(to: woke)))
    }
    latencies.sort()
    let median = latencies[latencies.count / 2]
    let worst = latencies.last!
    // `changed` proves each waiter was woken by the write, not by its own timeout; how fast is
    // a measurement (Tools/bench), not a test, so a loaded machine cannot fail the suite.
    print("hub notification latency over \(latencies.count) writes: median \(median), max \(worst)")
  }

  static func waitTimesOut(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    try await hub.append([makeRecord("a")])
    let cursor = try await endCursor(hub)
    let clock = ContinuousClock()
    let started = clock.now
    #expect(try await !hub.waitForChanges(after: cursor, timeout: .milliseconds(150)))
    #expect(started.duration(to: clock.now) >= .milliseconds(150))
    #expect(try await hub.waitForChanges(after: .start, timeout: .seconds(5)))
  }

  static func multiChunkBlobRoundTrip(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let content = pseudoRandomBytes(count: 5 << 20 + 3, seed: 7)
    let hash = try await putBlob(hub, content)
    #expect(try await hub.hasBlob(hash: hash))
    _ = try await putBlob(hub, content)  // idempotent
    #expect(try await fixture.openAnother().hasBlob(hash: hash))
    let fetched = try await fetchBlob(hub, hash)
    #expect(fetched.count == content.count)
    #expect(fetched == content)
  }

  static func emptyBlobRoundTrip(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let hash = try await putBlob(hub, [])
    #expect(try await hub.hasBlob(hash: hash))
    #expect(try await fetchBlob(hub, hash, prefill: Array("stale".utf8)) == [])
  }

  static func corruptPutRefused(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let content = pseudoRandomBytes(count: 3 << 20, seed: 1)
    var claimed = HubHash.sha256(content)
    claimed[0] ^= 0xff
    let file = try TemporaryFile(content)
    await #expect {
      try await hub.putBlob(hash: claimed, from: file.descriptor)
    } throws: { isIntegrityError($0) }
    #expect(try await !hub.hasBlob(hash: claimed))
    #expect(try await !hub.hasBlob(hash: HubHash.sha256(content)))
    await #expect(throws: HubError.missingBlob(claimed)) {
      try await hub.append([makeRecord("a", blobs: [claimed])])
    }
  }

  static func corruptFetchDetected(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let content = pseudoRandomBytes(count: 2 << 20 + 100, seed: 3)
    let hash = try await putBlob(hub, content)
    try await fixture.corruptBlob(hash)
    await #expect {
      _ = try await fetchBlob(hub, hash)
    } throws: { isIntegrityError($0) }
  }

  /// A put from a file this device cannot read, and a fetch into a file it cannot write (its
  /// disk is full, as here a descriptor opened the other way), fail as ``HubError/local(_:)``:
  /// the device must not call itself offline for its own disk. Small and large blobs take
  /// different paths in a hub.
  static func callersFileFails(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    for (count, seed) in [(1000, UInt64(11)), ((3 << 20) + 5, UInt64(12))] {
      let content = pseudoRandomBytes(count: count, seed: seed)
      let hash = HubHash.sha256(content)
      let path = NSTemporaryDirectory() + "/hubtests-\(UUID().uuidString)"
      #expect(FileManager.default.createFile(atPath: path, contents: Data(content)))
      let writeOnly = open(path, O_WRONLY | O_CLOEXEC)
      let readOnly = open(path, O_RDONLY | O_CLOEXEC)
      unlink(path)
      defer {
        close(writeOnly)
        close(readOnly)
      }
      try #require(writeOnly >= 0 && readOnly >= 0)
      await #expect {
        try await hub.putBlob(hash: hash, from: writeOnly)
      } throws: { isLocalError($0) }
      #expect(try await !hub.hasBlob(hash: hash))
      try await hub.putBlob(hash: hash, from: readOnly)
      await #expect {
        try await hub.fetchBlob(hash: hash, to: readOnly)
      } throws: { isLocalError($0) }
      #expect(try await fetchBlob(hub, hash) == content)
    }
  }

  static func smallBlobs(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let small = try await (0..<5).asyncMap {
      try await putBlob(hub, pseudoRandomBytes(count: 4096 + $0, seed: UInt64($0)))
    }
    let large = try await putBlob(hub, pseudoRandomBytes(count: 70_000, seed: 9))
    let damaged = try await putBlob(hub, pseudoRandomBytes(count: 3000, seed: 10))
    try await fixture.corruptBlob(damaged)
    let missing = HubHash.sha256(Array("never put".utf8))
    let read = try await hub.smallBlobs(
      hashes: small + [large, damaged, missing], sizeLimit: 65536)
    for (hash, bytes) in read {
      #expect(small.contains(hash))
      #expect(HubHash.sha256(bytes) == hash)
    }
    // What is left out takes fetchBlob, which still has it.
    for hash in small where read[hash] == nil {
      #expect(HubHash.sha256(try await fetchBlob(hub, hash)) == hash)
    }
  }

  static func putSmallBlobs(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let contents = (0..<5).map { pseudoRandomBytes(count: 100 * $0, seed: UInt64($0)) }
    var blobs = Dictionary(uniqueKeysWithValues: contents.map { (HubHash.sha256($0), $0) })
    var wrong = HubHash.sha256(Array("other".utf8))
    wrong[0] ^= 0xff
    blobs[wrong] = Array("other".utf8)
    let stored = try await hub.putSmallBlobs(blobs)
    #expect(!stored.contains(wrong))
    #expect(try await !hub.hasBlob(hash: wrong))
    for content in contents {
      let hash = HubHash.sha256(content)
      // What a hub did not store takes putBlob.
      if !stored.contains(hash) { _ = try await putBlob(hub, content) }
      #expect(try await fetchBlob(hub, hash) == content)
    }
    // Again: nothing changes, and the hub still has them all.
    let again = try await hub.putSmallBlobs(blobs)
    #expect(again.isSubset(of: Set(blobs.keys).subtracting([wrong])))
  }

  static func missingBlobReported(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let hash = HubHash.sha256(Array("never put".utf8))
    #expect(try await !hub.hasBlob(hash: hash))
    await #expect(throws: HubError.missingBlob(hash)) { _ = try await fetchBlob(hub, hash) }
  }

  static func damagedBlobIsRepaired(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let content = pseudoRandomBytes(count: 2 << 20 + 100, seed: 11)
    let hash = try await putBlob(hub, content)
    try await hub.append([makeRecord("a", blobs: [hash])])
    try await fixture.corruptBlob(hash)
    #expect(try await hub.wantedBlobs().isEmpty)
    #expect(try await hub.reportDamagedBlob(hash: hash) == .wanted)
    #expect(try await !hub.hasBlob(hash: hash))
    #expect(try await fixture.openAnother().wantedBlobs() == [hash])
    await #expect(throws: HubError.missingBlob(hash)) { _ = try await fetchBlob(hub, hash) }
    // Reported again (by a device that found it missing): still wanted, nothing else changes.
    #expect(try await fixture.openAnother().reportDamagedBlob(hash: hash) == .wanted)
    // A device that has the content puts it again, through the ordinary put.
    _ = try await putBlob(fixture.openAnother(), content)
    #expect(try await hub.wantedBlobs().isEmpty)
    #expect(try await fetchBlob(hub, hash) == content)
    #expect(try await hub.reportDamagedBlob(hash: hash) == .intact)
    #expect(try await allRecords(hub) == [makeRecord("a", blobs: [hash])])
  }

  static func goodBlobReportedStays(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    for (seed, count) in [(21, 0), (22, 10), (23, 3 << 20 + 1)] {
      let content = pseudoRandomBytes(count: count, seed: UInt64(seed))
      let hash = try await putBlob(hub, content)
      #expect(try await fixture.openAnother().reportDamagedBlob(hash: hash) == .intact)
      #expect(try await hub.hasBlob(hash: hash))
      #expect(try await fetchBlob(hub, hash) == content)
    }
    #expect(try await hub.wantedBlobs().isEmpty)
  }

  static func unknownBlobReported(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    #expect(try await hub.reportDamagedBlob(hash: HubHash.sha256(Array("nobody".utf8))) == .unknown)
    #expect(try await hub.reportDamagedBlob(hash: [1, 2, 3]) == .unknown)
    #expect(try await hub.wantedBlobs().isEmpty)
  }

  static func lostBlobIsWanted(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let named = Array("named by a record".utf8)
    let loose = Array("named by nothing".utf8)
    let namedHash = try await putBlob(hub, named)
    let looseHash = try await putBlob(hub, loose)
    try await hub.append([makeRecord("a", blobs: [namedHash])])
    try await fixture.loseBlob(namedHash)
    try await fixture.loseBlob(looseHash)
    #expect(try await hub.reportDamagedBlob(hash: looseHash) == .unknown)
    #expect(try await hub.reportDamagedBlob(hash: namedHash) == .wanted)
    #expect(try await hub.wantedBlobs() == [namedHash])
    _ = try await putBlob(hub, named)
    #expect(try await hub.wantedBlobs().isEmpty)
    #expect(try await fetchBlob(hub, namedHash) == named)
  }

  static func badReplacementRefused(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let content = pseudoRandomBytes(count: 1 << 20 + 5, seed: 31)
    let hash = try await putBlob(hub, content)
    try await fixture.corruptBlob(hash)
    #expect(try await hub.reportDamagedBlob(hash: hash) == .wanted)
    var other = content
    other[7] ^= 1
    let file = try TemporaryFile(other)
    await #expect {
      try await hub.putBlob(hash: hash, from: file.descriptor)
    } throws: { isIntegrityError($0) }
    #expect(try await !hub.hasBlob(hash: hash))
    #expect(try await hub.wantedBlobs() == [hash])
    _ = try await putBlob(hub, content)
    #expect(try await hub.wantedBlobs().isEmpty)
    #expect(try await fetchBlob(hub, hash) == content)
  }
}

extension HubConformance {
  static func pruning(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    #expect(try await hub.retention() == nil)
    try await hub.setRetention(RetentionPolicy.keep(milliseconds: 0).serialized)
    #expect(try await fixture.openAnother().retention() == "keep 0")
    let history = try await versionChain(hub, ["one", "two", "two"])
    try await hub.append(history.map(\.record))
    let cursor = try await endCursor(hub)
    try await hub.prune(records: history.dropLast().map(\.record.id))
    // The records stay, naming no blob; the first blob went with the only record that named
    // it, the second stays for the head.
    var stripped = history.map(\.record)
    stripped[0].blobs = []
    stripped[1].blobs = []
    #expect(try await allRecords(hub) == stripped)
    #expect(try await !hub.hasBlob(hash: history[0].blob))
    #expect(try await hub.hasBlob(hash: history[2].blob))
    #expect(try await fetchBlob(hub, history[2].blob) == Array("two".utf8))
    // A cursor taken before the prune pages on; pruning again changes nothing.
    #expect(try await allRecords(hub, after: cursor).isEmpty)
    try await hub.prune(records: history.dropLast().map(\.record.id))
    #expect(try await allRecords(hub) == stripped)
  }
}

extension HubConformance {
  /// Were it still wanted, a device holding the content would put it back as a blob that no
  /// record names and no later prune looks at: space the hub would never give back.
  static func prunedBlobIsNotWanted(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    try await hub.setRetention(RetentionPolicy.keep(milliseconds: 0).serialized)
    let history = try await versionChain(hub, ["one", "two"])
    try await hub.append(history.map(\.record))
    try await fixture.loseBlob(history[0].blob)
    #expect(try await hub.reportDamagedBlob(hash: history[0].blob) == .wanted)
    #expect(try await hub.wantedBlobs() == [history[0].blob])
    try await hub.prune(records: [history[0].record.id])
    #expect(try await fixture.openAnother().wantedBlobs().isEmpty)
    #expect(try await hub.reportDamagedBlob(hash: history[0].blob) == .unknown)
    #expect(try await fetchBlob(hub, history[1].blob) == Array("two".utf8))
  }
}

extension HubConformance {
  static func forgetting(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    try await hub.setRetention(RetentionPolicy.keep(milliseconds: 0).serialized)
    let history = try await versionChain(hub, ["one", "two", "three"])
    let shared = try await putBlob(hub, Array("shared".utf8))
    let other = makeRecord("another document", blobs: [shared, history[2].blob])
    try await hub.append(history.map(\.record) + [other])
    #expect(try await hub.erasures(after: .start, limit: 10).erasures.isEmpty)
    let cursor = try await endCursor(hub)
    try await hub.prune(records: [history[0].record.id])
    let pruned = try await hub.erasures(after: .start, limit: 10)
    #expect(pruned.erasures == [Erasure(id: history[0].record.id, kind: .released)])
    // Forgetting the document: its records go, and the blobs only they named; a blob another
    // record names stays. Unknown ids are skipped.
    let unknown = HubHash.sha256(Array("never appended".utf8))
    try await hub.forget(records: history.map(\.record.id) + [unknown])
    #expect(try await allRecords(hub) == [other])
    #expect(try await !hub.hasBlob(hash: history[1].blob))
    #expect(try await hub.hasBlob(hash: history[2].blob))
    #expect(try await hub.hasBlob(hash: shared))
    // A cursor taken before pages on; the erasures page in order, each once, from any handle.
    #expect(try await allRecords(hub, after: cursor).isEmpty)
    var seen: [Erasure] = []
    var erasureCursor = pruned.cursor
    while true {
      let page = try await fixture.openAnother().erasures(after: erasureCursor, limit: 2)
      if page.erasures.isEmpty { break }
      seen += page.erasures
      erasureCursor = page.cursor
    }
    #expect(seen == history.map { Erasure(id: $0.record.id, kind: .forgotten) })
    // Forgetting again lists nothing more; appending a forgotten record again is a new record.
    try await hub.forget(records: history.map(\.record.id))
    #expect(try await hub.erasures(after: erasureCursor, limit: 10).erasures.isEmpty)
    try await hub.append([history[2].record])
    #expect(try await allRecords(hub) == [other, history[2].record])
  }
}

/// A line of version records of one document, each the parent of the next, their content put
/// on `hub`, made long enough ago that any retention lets the earlier ones go.
func versionChain(_ hub: any Hub, _ contents: [String], age: UInt64 = 3_600_000) async throws
  -> [(record: HubRecord, blob: [UInt8])]
{
  var chain: [(record: HubRecord, blob: [UInt8])] = []
  var parent: VersionRecord?
  let start = UInt64(Date().timeIntervalSince1970 * 1000) - age
  for (index, text) in contents.enumerated() {
    let bytes = Array(text.utf8)
    let blob = try await putBlob(hub, bytes)
    let version = VersionRecord(
      path: DocumentPath("notes/plan.md"),
      content: .file(hash: ContentHash(of: bytes), size: UInt64(bytes.count), executable: false),
      parents: parent.map { [$0.id] } ?? [],
      modified: HLCTimestamp(wallMilliseconds: start + UInt64(index) * 1000),
      deviceID: DeviceID(high: 0, low: 1), deviceName: "laptop")
    chain.append((HubRecord(id: version.id.bytes, payload: version.encoded, blobs: [blob]), blob))
    parent = version
  }
  return chain
}

// MARK: - Helpers shared by the checks

func makeRecord(_ name: String, blobs: [[UInt8]] = []) -> HubRecord {
  HubRecord(
    id: HubHash.sha256(Array("record \(name)".utf8)), payload: Array("payload of \(name)".utf8),
    blobs: blobs)
}

@discardableResult
func putBlob(_ hub: any Hub, _ content: [UInt8]) async throws -> [UInt8] {
  let file = try TemporaryFile(content)
  let hash = HubHash.sha256(content)
  try await hub.putBlob(hash: hash, from: file.descriptor)
  return hash
}

func fetchBlob(_ hub: any Hub, _ hash: [UInt8], prefill: [UInt8] = []) async throws -> [UInt8] {
  let file = try TemporaryFile(prefill)
  try await hub.fetchBlob(hash: hash, to: file.descriptor)
  return try file.contents()
}

func allRecords(_ hub: any Hub, after start: HubCursor = .start) async throws -> [HubRecord] {
  var cursor = start
  var all: [HubRecord] = []
  while true {
    let page = try await hub.records(after: cursor, limit: 50)
    if page.records.isEmpty { return all }
    all += page.records
    cursor = page.cursor
  }
}

func endCursor(_ hub: any Hub) async throws -> HubCursor {
  var cursor = HubCursor.start
  while true {
    let page = try await hub.records(after: cursor, limit: 100)
    if page.records.isEmpty { return cursor }
    cursor = page.cursor
  }
}

/// Whether `error` is a failure of the caller's own file, naming why.
func isLocalError(_ error: any Error) -> Bool {
  guard case .local(let reason) = error as? HubError else { return false }
  return reason.contains("Bad file descriptor") || reason.contains("Invalid argument")
}

/// Whether `error` is the hub's refusal of bytes that do not match their hash.
func isIntegrityError(_ error: any Error) -> Bool {
  guard case .integrity = error as? HubError else { return false }
  return true
}

/// Deterministic bytes that do not compress or repeat, so a misplaced chunk cannot go unnoticed.
extension Sequence {
  /// `map` with an async transform, in order.
  func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
    var result: [T] = []
    for element in self { result.append(try await transform(element)) }
    return result
  }
}

func pseudoRandomBytes(count: Int, seed: UInt64) -> [UInt8] {
  var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
  var bytes = [UInt8](repeating: 0, count: count)
  for index in bytes.indices {
    state ^= state << 13
    state ^= state >> 7
    state ^= state << 17
    bytes[index] = UInt8(truncatingIfNeeded: state)
  }
  return bytes
}

/// An unlinked scratch file with a descriptor, closed when the value goes away.
final class TemporaryFile {
  let descriptor: Int32

  init(_ content: [UInt8]) throws {
    let path = NSTemporaryDirectory() + "/hubtests-\(UUID().uuidString)"
    descriptor = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    unlink(path)
    let written = content.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    guard written == content.count else { throw POSIXError(.EIO) }
  }

  func contents() throws -> [UInt8] { try fileContents(descriptor) }

  deinit { close(descriptor) }
}

/// Every byte of the open file `fd`, read from offset 0.
func fileContents(_ fd: Int32) throws -> [UInt8] {
  var info = stat()
  guard fstat(fd, &info) == 0 else { throw POSIXError(.EIO) }
  var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
  let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
  guard read == bytes.count else { throw POSIXError(.EIO) }
  return bytes
}
