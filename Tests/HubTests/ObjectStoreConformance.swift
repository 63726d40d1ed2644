import DocumentModel
import Foundation
import Hub
import Testing

/// What an object-store check gets: hubs of one kind, opened on one fresh library.
struct ObjectStoreFixture: Sendable {
  /// A fresh library's hub.
  let hub: any Hub & ObjectStore
  /// A second, independent handle on the same library, as another device would have.
  let openAnother: @Sendable () throws -> any Hub & ObjectStore
  /// Moves every stored object's last put or presence check two days back, behind the hub's
  /// back, so that a prune finds each past its grace period.
  let ageObjects: @Sendable () async throws -> Void
  /// Damages the stored bytes of an object behind the hub's back, as a failing disk would.
  let corruptObject: @Sendable (_ id: [UInt8]) async throws -> Void
}

/// The checks every hub's content objects are held to (see ``ObjectStore``).
enum ObjectStoreConformance {
  typealias Check = @Sendable (ObjectStoreFixture) async throws -> Void

  static let checks: [(name: String, run: Check)] = [
    ("objects go up once, children first, and read back", roundTrip),
    ("a node whose child is absent is refused, with its whole batch", childrenFirst),
    ("malformed objects are refused", malformedRefused),
    ("a record may name an object as its content, never an absent one", recordsNameObjects),
    ("a prune sweeps what no record reaches, and keeps what another version shares", pruneSweeps),
    ("an upload whose record is not committed survives a prune", uploadSurvivesPrune),
    ("forgetting sweeps what only the forgotten records reached", forgetSweeps),
    (
      "prune and forget give back at once what only their records reached, but what a recent node names stays",
      freedAtOnce
    ),
    ("a damaged object is left out, wanted, and put back", damagedObjectRepaired),
  ]

  /// A chunk of `text`, and a node over `children`, with ids as a device would give them
  /// (any 32 bytes: the hub cannot check them).
  static func chunk(_ text: String) -> HubObject {
    HubObject(id: HubHash.sha256(Array("chunk \(text)".utf8)), data: [0] + Array(text.utf8))
  }

  static func node(_ name: String, _ children: [HubObject]) -> HubObject {
    HubObject(
      id: HubHash.sha256(Array("node \(name)".utf8)),
      data: [0] + children.flatMap(\.id), references: children.map(\.id))
  }

  /// Two versions of one document, the second the child of the first, made an hour ago so that
  /// retention lets the first go: each names one object as its content.
  static func versionPair(_ first: [UInt8], _ second: [UInt8]) -> (HubRecord, HubRecord) {
    let start = UInt64(Date().timeIntervalSince1970 * 1000) - 3_600_000
    let one = VersionRecord(
      path: DocumentPath("big.img"),
      content: .file(hash: ContentHash(of: first), size: 1, executable: false), parents: [],
      modified: HLCTimestamp(wallMilliseconds: start), deviceID: DeviceID(high: 0, low: 1),
      deviceName: "laptop")
    let two = VersionRecord(
      path: DocumentPath("big.img"),
      content: .file(hash: ContentHash(of: second), size: 1, executable: false), parents: [one.id],
      modified: HLCTimestamp(wallMilliseconds: start + 1000), deviceID: DeviceID(high: 0, low: 1),
      deviceName: "laptop")
    return (
      HubRecord(id: one.id.bytes, payload: one.encoded, blobs: [first]),
      HubRecord(id: two.id.bytes, payload: two.encoded, blobs: [second])
    )
  }

  static func roundTrip(_ fixture: ObjectStoreFixture) async throws {
    let hub = fixture.hub
    let (a, b) = (chunk("a"), chunk("b"))
    let root = node("root", [a, b])
    let ids = [a.id, b.id, root.id]
    #expect(try await hub.missingObjects(ids) == ids)
    try await hub.putObjects([a, b, root])
    #expect(try await hub.missingObjects(ids).isEmpty)
    // A second put is harmless, and another handle sees the same objects.
    try await hub.putObjects([a, root])
    let read = try await fixture.openAnother().objects(ids + [chunk("never put").id])
    #expect(read == [a.id: a.data, b.id: b.data, root.id: root.data])
    #expect(try await hub.missingObjects([chunk("c").id, a.id]) == [chunk("c").id])
  }

  static func childrenFirst(_ fixture: ObjectStoreFixture) async throws {
    let hub = fixture.hub
    let (a, b) = (chunk("a"), chunk("b"))
    let root = node("root", [a, b])
    await #expect(throws: HubError.missingBlob(b.id)) { try await hub.putObjects([a, root, b]) }
    #expect(try await hub.missingObjects([a.id, b.id, root.id]).count == 3)
    try await hub.putObjects([a])
    await #expect(throws: HubError.missingBlob(b.id)) { try await hub.putObjects([root]) }
    try await hub.putObjects([b, root])
    #expect(try await hub.missingObjects([a.id, b.id, root.id]).isEmpty)
  }

  static func malformedRefused(_ fixture: ObjectStoreFixture) async throws {
    let hub = fixture.hub
    await #expect(throws: HubError.self) {
      try await hub.putObjects([HubObject(id: [1, 2, 3], data: [0])])
    }
    await #expect(throws: HubError.self) {
      try await hub.putObjects([
        HubObject(
          id: chunk("big").id, data: [UInt8](repeating: 7, count: HubObject.maximumSize + 1))
      ])
    }
    await #expect(throws: HubError.self) { try await hub.missingObjects([[0]]) }
    #expect(try await hub.missingObjects([chunk("big").id]) == [chunk("big").id])
  }

  static func recordsNameObjects(_ fixture: ObjectStoreFixture) async throws {
    let hub = fixture.hub
    let root = node("root", [chunk("a")])
    await #expect(throws: HubError.missingBlob(root.id)) {
      try await hub.append([makeRecord("v1", blobs: [root.id])])
    }
    try await hub.putObjects([chunk("a"), root])
    try await hub.append([makeRecord("v1", blobs: [root.id])])
    #expect(try await allRecords(hub).map(\.blobs) == [[root.id]])
  }

  static func pruneSweeps(_ fixture: ObjectStoreFixture) async throws {
    let hub = fixture.hub
    try await hub.setRetention(RetentionPolicy.keep(milliseconds: 0).serialized)
    let (a, b, c) = (chunk("a"), chunk("b"), chunk("c"))
    let first = node("first", [a, b])
    let second = node("second", [a, c])
    let lone = chunk("a small file")
    let unnamed = chunk("put, never named")
    try await hub.putObjects([a, b, c, first, second, lone, unnamed])
    let (v1, v2) = versionPair(first.id, second.id)
    let small = makeRecord("small", blobs: [lone.id])
    try await hub.append([v1, v2, small])
    try await fixture.ageObjects()
    try await hub.prune(records: [v1.id])
    // The first version's tree and its own chunk go; the chunk it shares with the second stays.
    #expect(
      try await hub.missingObjects([first.id, b.id, unnamed.id]) == [first.id, b.id, unnamed.id])
    #expect(try await hub.missingObjects([second.id, a.id, c.id, lone.id]).isEmpty)
    let read = try await hub.objects([second.id, a.id, c.id])
    #expect(read.count == 3)
  }

  static func uploadSurvivesPrune(_ fixture: ObjectStoreFixture) async throws {
    let hub = fixture.hub
    try await hub.setRetention(RetentionPolicy.keep(milliseconds: 0).serialized)
    let old = node("old", [chunk("old"), chunk("gone")])
    let kept = chunk("kept")
    try await hub.putObjects([chunk("old"), chunk("gone"), old, kept])
    let (v1, v2) = versionPair(old.id, kept.id)
    try await hub.append([v1, v2])
    try await fixture.ageObjects()
    // A device uploads the objects of its next version; one chunk it has already (the hub
    // says so, which makes it recent again), one it puts. Before its record commits, another
    // device prunes: nothing of the upload goes, and the record then commits.
    #expect(try await hub.missingObjects([chunk("old").id, chunk("new").id]) == [chunk("new").id])
    let fresh = node("fresh", [chunk("old"), chunk("new")])
    try await hub.putObjects([chunk("new"), fresh])
    try await fixture.openAnother().prune(records: [v1.id])
    #expect(
      try await hub.missingObjects([old.id, chunk("gone").id]) == [old.id, chunk("gone").id])
    #expect(try await hub.missingObjects([fresh.id, chunk("new").id, chunk("old").id]).isEmpty)
    try await hub.append([makeRecord("v3", blobs: [fresh.id])])
  }

  static func forgetSweeps(_ fixture: ObjectStoreFixture) async throws {
    let hub = fixture.hub
    let (a, b) = (chunk("a"), chunk("b"))
    let tree = node("tree", [a, b])
    try await hub.putObjects([a, b, tree])
    let document = makeRecord("document", blobs: [tree.id])
    let other = makeRecord("other", blobs: [b.id])
    try await hub.append([document, other])
    try await fixture.ageObjects()
    try await hub.forget(records: [document.id])
    #expect(try await hub.missingObjects([tree.id, a.id, b.id]) == [tree.id, a.id])
  }

  /// Nothing is aged here: the space of what only the pruned or forgotten records reached comes
  /// back at once, while a chunk that a node just put names (an upload whose record is not
  /// committed yet) stays with it, and so does what a live record reaches.
  static func freedAtOnce(_ fixture: ObjectStoreFixture) async throws {
    let hub = fixture.hub
    try await hub.setRetention(RetentionPolicy.keep(milliseconds: 0).serialized)
    let (a, b, c, d) = (chunk("a"), chunk("b"), chunk("c"), chunk("d"))
    let tree = node("tree", [a, b])
    let next = node("next", [b, c])
    try await hub.putObjects([a, b, c, d, tree, next])
    let (v1, v2) = versionPair(tree.id, next.id)
    let document = makeRecord("document", blobs: [d.id])
    try await hub.append([v1, v2, document])
    // Another device's upload in flight: a node over the chunk only the document reaches.
    let inFlight = node("in flight", [d, chunk("new")])
    try await hub.putObjects([chunk("new"), inFlight])
    try await hub.prune(records: [v1.id])
    #expect(try await hub.missingObjects([tree.id, a.id]) == [tree.id, a.id])
    #expect(try await hub.missingObjects([next.id, b.id, c.id]).isEmpty)
    try await fixture.openAnother().forget(records: [document.id])
    #expect(try await hub.missingObjects([d.id, inFlight.id, chunk("new").id]).isEmpty)
    try await hub.append([makeRecord("in flight", blobs: [inFlight.id])])
  }

  static func damagedObjectRepaired(_ fixture: ObjectStoreFixture) async throws {
    let hub = fixture.hub
    let (a, b) = (chunk("a"), chunk("b"))
    try await hub.putObjects([a, b])
    try await fixture.corruptObject(a.id)
    #expect(try await hub.objects([a.id, b.id]) == [b.id: b.data])
    #expect(try await hub.wantedObjects() == [a.id])
    #expect(try await hub.missingObjects([a.id, b.id]) == [a.id])
    try await hub.putObjects([a])
    #expect(try await hub.wantedObjects().isEmpty)
    #expect(try await hub.objects([a.id]) == [a.id: a.data])
  }
}
