import ContentModel
import DocumentModel
import Testing

/// The simulated hub's sweep follows the real hub's rules, and the simulation's object
/// invariants catch a hub that breaks them.
@Suite struct SimObjectStoreTests {
  static func id(_ byte: UInt8) -> ObjectID { ObjectID(Digest256.sha256([byte])) }

  @Test func sweepKeepsWhatRecordsAndRecentUploadsReachAndFreesTheRest() {
    var store = SimObjectStore()
    let (shared, old, released, pendingChunk) = (Self.id(1), Self.id(2), Self.id(3), Self.id(4))
    let (retainedNode, releasedNode, pendingNode) = (Self.id(10), Self.id(11), Self.id(12))
    var refused: [ObjectID] = []
    func put(_ id: ObjectID, _ references: [ObjectID], now: UInt64) {
      if !store.put(id, frame: [1], references: references, now: now) { refused.append(id) }
    }
    for id in [shared, old, released] { put(id, [], now: 0) }
    put(retainedNode, [shared], now: 0)
    put(releasedNode, [shared, released], now: 0)
    // A node is refused until its children are there.
    put(pendingNode, [pendingChunk], now: 20)
    put(pendingChunk, [], now: 20)
    put(pendingNode, [pendingChunk, released], now: 20)
    #expect(refused == [pendingNode])
    #expect(store.objects[pendingNode] != nil)
    // Asking touches what is there: `old` is recent again.
    let missing = store.missing([old, Self.id(99)], now: 20)
    #expect(missing == [Self.id(99)])
    store.sweep(retained: [retainedNode], released: [releasedNode], now: 22)
    // Released and not named by the pending upload or a record: gone. Shared with a retained
    // version, or named by an upload whose record is not committed yet: kept.
    #expect(store.objects[releasedNode] == nil)
    #expect(store.objects[shared] != nil && store.objects[retainedNode] != nil)
    #expect(store.objects[pendingNode] != nil && store.objects[pendingChunk] != nil)
    #expect(store.objects[released] != nil)
    #expect(store.objects[old] != nil)
    // Past the grace, what no record names goes.
    store.sweep(retained: [retainedNode], released: [], now: 22 + SimObjectStore.grace + 1)
    #expect(Set(store.objects.keys) == [retainedNode, shared])
  }

  @Test func theSimulationCatchesAHubThatFreesReachableObjects() {
    // The first seeds suffice (seed 5 is the first caught): a prune that releases a tree
    // sharing chunks with a retained version is common wherever files are edited.
    var failure: String?
    for seed in UInt64(0)..<300 where failure == nil {
      var schedule = Schedule(seed: seed)
      schedule.hub.sweepsReachable = true
      failure = schedule.run()
    }
    #expect(failure?.contains("which the hub lacks") == true, "\(failure ?? "no failure")")
  }
}
