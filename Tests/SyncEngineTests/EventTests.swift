import DocumentFileSystem
import DocumentModel
import Foundation
import Hub
import SyncEngine
import Synchronization
import Testing

/// What `docsync events` and desktop notifications are made from: the engine's event log.
@Suite("engine events")
struct EventTests {
  /// `b` paused while `a` edits `path`; `b` edits later and resumes: `b`'s edit is current,
  /// `a`'s a conflict version on both.
  func conflict(_ a: Device, _ b: Device, _ path: String, round: Int) async throws {
    try a.write(path, "base \(round)\n")
    try await a.sync()
    try await b.sync()
    b.engine.pause()
    try a.write(path, "from a \(round)\n")
    try await a.sync()
    try await Task.sleep(for: .milliseconds(20))
    try b.write(path, "from b \(round)\n")
    b.engine.resume()
    try await b.sync()
    try await a.sync()
  }

  func kinds(_ device: Device, after sequence: UInt64) -> [EngineEvent.Kind] {
    device.engine.events.events(after: sequence).map(\.kind)
  }

  @Test func conflictsAndEachWayOfResolvingThemAreReportedOnEveryDevice() async throws {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    let plan = DocumentPath("plan.md")

    // A conflict appears on both devices, naming both devices, the current one's first.
    var marks = (a: a.engine.events.latest, b: b.engine.events.latest)
    try await conflict(a, b, "plan.md", round: 1)
    for (device, mark) in [(a, marks.a), (b, marks.b)] {
      let found = kinds(device, after: mark).compactMap { kind -> (Int, [String], Int)? in
        guard case .conflict(let path, let added, let versions, let devices) = kind, path == plan
        else { return nil }
        return (added.count, devices, versions)
      }
      #expect(found.count == 1, "\(device.engine.events.events(after: mark))")
      #expect(found.first?.0 == 1 && found.first?.1 == ["b", "a"] && found.first?.2 == 1)
    }

    // Choosing the conflict version (its content written over the document) on b.
    marks = (a.engine.events.latest, b.engine.events.latest)
    let version = try b.versions("plan.md")[0]
    try b.write("plan.md", try b.read(".versions/plan.md/" + version))
    try await b.sync()
    try await a.sync()
    for (device, mark) in [(a, marks.a), (b, marks.b)] {
      #expect(
        kinds(device, after: mark).contains(
          .resolved(path: plan, how: .chose, by: "b", remaining: 0)),
        "\(device.engine.events.events(after: mark))")
    }

    // Removing the conflict version on a keeps the current one.
    try await conflict(a, b, "plan.md", round: 2)
    marks = (a.engine.events.latest, b.engine.events.latest)
    let second = try a.versions("plan.md")[0]
    let folder = try a.inode(".versions/plan.md")
    try a.fileSystem.unlink(parent: folder, name: Array(second.utf8), caller: a.me)
    try await a.sync()
    try await b.sync()
    for (device, mark) in [(a, marks.a), (b, marks.b)] {
      #expect(
        kinds(device, after: mark).contains(
          .resolved(path: plan, how: .kept, by: "a", remaining: 0)),
        "\(device.engine.events.events(after: mark))")
    }

    // Deleting the document in conflict deletes only its current version: a deletion never
    // beats a concurrent edit, so the conflict version takes the path, as if chosen.
    try await conflict(a, b, "plan.md", round: 3)
    marks = (a.engine.events.latest, b.engine.events.latest)
    try a.fileSystem.unlink(
      parent: DocumentFileSystem.rootInode, name: Array("plan.md".utf8), caller: a.me)
    try await a.sync()
    try await b.sync()
    for (device, mark) in [(a, marks.a), (b, marks.b)] {
      #expect(try device.read("plan.md") == "from a 3\n")
      #expect(
        kinds(device, after: mark).contains(
          .resolved(path: plan, how: .chose, by: "a", remaining: 0)),
        "\(device.engine.events.events(after: mark))")
    }
    await a.stop()
    await b.stop()
  }

  @Test func finishedTransfersAreReportedOnceEachWay() async throws {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    try await b.sync()
    let marks = (a: a.engine.events.latest, b: b.engine.events.latest)
    try a.write("one.txt", "one\n")
    try a.write("two.txt", "two!\n")
    try await a.sync()
    try await b.sync()
    let uploads = kinds(a, after: marks.a).compactMap { kind -> (Int, UInt64)? in
      guard case .transferred(.upload, let files, let bytes) = kind else { return nil }
      return (files, bytes)
    }
    let downloads = kinds(b, after: marks.b).compactMap { kind -> (Int, UInt64)? in
      guard case .transferred(.download, let files, let bytes) = kind else { return nil }
      return (files, bytes)
    }
    #expect(uploads.map(\.0).reduce(0, +) == 2 && uploads.map(\.1).reduce(0, +) == 9, "\(uploads)")
    #expect(downloads.map(\.0).reduce(0, +) == 2 && downloads.map(\.1).reduce(0, +) == 9)
    await a.stop()
    await b.stop()
  }

  @Test func goingOfflineAndBackAndRefusedRecordsAreReported() async throws {
    let library = Library()
    let hub = UnplugableHub(try SQLiteHub(path: library.folder + "/hub.sqlite"))
    let a = try Device(folder: library.folder + "/a", hub: hub, hubDescription: "test", name: "a")
    try await a.sync()
    let mark = a.engine.events.latest
    hub.unplugged = true
    try a.write("offline.txt", "written offline\n")
    await #expect(throws: (any Error).self) { try await a.engine.synchronize(timeout: .seconds(1)) }
    hub.unplugged = false
    try await a.sync()
    let kinds = kinds(a, after: mark)
    let offline = kinds.firstIndex { if case .offline = $0 { true } else { false } }
    let online = kinds.firstIndex { if case .online = $0 { true } else { false } }
    #expect(offline != nil && online != nil && offline! < online!, "\(kinds)")
    #expect(kinds.filter { if case .offline = $0 { true } else { false } }.count == 1)

    // A record no docsync makes (a path that climbs out of the library) is refused, reported.
    let forged = VersionRecord(
      path: DocumentPath(components: [Array("..".utf8), Array("escape.txt".utf8)]),
      content: .directory, parents: [], modified: HLCTimestamp(wallMilliseconds: 1_000_000),
      deviceID: DeviceID(high: 0xBAD, low: 0xBAD), deviceName: "mallory")
    // The mark comes first: the engine watches the hub and may pull the record on its own
    // before this test's sync starts.
    let before = a.engine.events.latest
    try await hub.append([HubRecord(id: forged.id.bytes, payload: forged.encoded)])
    try await a.sync()
    let refused = a.engine.events.events(after: before).compactMap { event -> String? in
      guard case .refused(let version, _, let device, _) = event.kind else { return nil }
      return "\(version) \(device)"
    }
    #expect(refused == ["\(forged.id.hex) mallory"])
    await a.stop()
  }

  /// A `docsync sync` that gave up on an unreachable hub no longer hurries the loop: it once
  /// retried every 20 ms until the hub came back, for days on a laptop off the network.
  @Test func aSyncThatGaveUpLeavesTheLoopToItsBackoff() async throws {
    let library = Library()
    let hub = UnplugableHub(try SQLiteHub(path: library.folder + "/hub.sqlite"))
    let a = try Device(folder: library.folder + "/a", hub: hub, hubDescription: "test", name: "a")
    try await a.sync()
    hub.unplugged = true
    try a.write("offline.txt", "written offline\n")
    // Bounds by the time each part took: a test run loaded with other tests may stretch it.
    let clock = ContinuousClock()
    var asked = (tries: hub.refusals, at: clock.now)
    await #expect(throws: (any Error).self) {
      try await a.engine.synchronize(timeout: .seconds(1))
    }
    // While the sync waited, a few tries a second (four at most, and the first at once).
    var tries = hub.refusals - asked.tries
    var seconds = Double((clock.now - asked.at).components.seconds) + 1
    #expect(tries >= 2 && Double(tries) <= 4 * seconds + 2, "\(tries) tries in \(seconds) s")
    asked = (hub.refusals, clock.now)
    try await Task.sleep(for: .seconds(2))
    // Then the backoff (a few seconds by now) alone: the 20 ms of before made 100 tries.
    tries = hub.refusals - asked.tries
    seconds = Double((clock.now - asked.at).components.seconds) + 1
    #expect(Double(tries) <= seconds + 1, "\(tries) tries in \(seconds) s after the sync gave up")
    hub.unplugged = false
    // A new request tries at once, whatever the backoff.
    try await a.engine.synchronize(timeout: .seconds(5))
    await a.stop()
  }

  @Test func theLogKeepsItsNewestEventsAndWakesItsReaders() async throws {
    let log = EventLog(capacity: 3)
    #expect(log.latest == 0)
    for index in 0..<5 { log.post(.offline(reason: "\(index)"), time: 1) }
    #expect(log.latest == 5)
    // The two oldest are gone; a reader sees the gap in sequence numbers.
    #expect(log.events(after: 0).map(\.sequence) == [3, 4, 5])
    #expect(log.events(after: 4).map(\.kind) == [.offline(reason: "4")])

    let waiter = Task.detached { log.wait(after: 5) }
    try await Task.sleep(for: .milliseconds(50))
    log.post(.online(since: 7), time: 2)
    #expect(await waiter.value.map(\.kind) == [.online(since: 7)])

    let closed = Task.detached { log.wait(after: 6) }
    try await Task.sleep(for: .milliseconds(50))
    log.close()
    #expect(await closed.value.isEmpty)
  }
}

/// A hub that can be made unreachable, as a network cable pulled out.
final class UnplugableHub: Hub {
  let inner: any Hub
  private let state = Mutex(false)
  private let refusalCount = Mutex(0)

  init(_ inner: any Hub) { self.inner = inner }

  var unplugged: Bool {
    get { state.withLock { $0 } }
    set { state.withLock { $0 = newValue } }
  }

  /// How many calls found it unplugged: a turn of the engine's loop stops at the first.
  var refusals: Int { refusalCount.withLock { $0 } }

  private func check() throws(HubError) {
    if unplugged {
      refusalCount.withLock { $0 += 1 }
      throw .unreachable("unplugged by the test")
    }
  }

  func putBlob(hash: [UInt8], from fileDescriptor: Int32) async throws(HubError) {
    try check()
    try await inner.putBlob(hash: hash, from: fileDescriptor)
  }
  func hasBlob(hash: [UInt8]) async throws(HubError) -> Bool {
    try check()
    return try await inner.hasBlob(hash: hash)
  }
  func fetchBlob(hash: [UInt8], to fileDescriptor: Int32) async throws(HubError) {
    try check()
    try await inner.fetchBlob(hash: hash, to: fileDescriptor)
  }
  func append(_ records: [HubRecord]) async throws(HubError) {
    try check()
    try await inner.append(records)
  }
  func records(after cursor: HubCursor, limit: Int) async throws(HubError) -> HubPage {
    try check()
    return try await inner.records(after: cursor, limit: limit)
  }
  func waitForChanges(after cursor: HubCursor, timeout: Duration) async throws(HubError) -> Bool {
    try check()
    return try await inner.waitForChanges(after: cursor, timeout: timeout)
  }
  func reportDamagedBlob(hash: [UInt8]) async throws(HubError) -> BlobCondition {
    try check()
    return try await inner.reportDamagedBlob(hash: hash)
  }
  func wantedBlobs() async throws(HubError) -> [[UInt8]] {
    try check()
    return try await inner.wantedBlobs()
  }
  func retention() async throws(HubError) -> String? {
    try check()
    return try await inner.retention()
  }
  func setRetention(_ serialized: String) async throws(HubError) {
    try check()
    try await inner.setRetention(serialized)
  }
  func prune(records ids: [[UInt8]]) async throws(HubError) {
    try check()
    try await inner.prune(records: ids)
  }
  func forget(records ids: [[UInt8]]) async throws(HubError) {
    try check()
    try await inner.forget(records: ids)
  }
  func erasures(after cursor: HubCursor, limit: Int) async throws(HubError) -> ErasurePage {
    try check()
    return try await inner.erasures(after: cursor, limit: limit)
  }
}
