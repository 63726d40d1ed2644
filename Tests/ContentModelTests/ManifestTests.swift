import ContentModel
import DocumentModel
import Testing

@Suite struct ManifestTests {
  func syntheticChunks(_ count: Int, seed: UInt64) -> [ManifestEntry] {
    var random = TestBytes(seed: seed)
    return (0..<count).map { _ in
      ManifestEntry(
        id: ObjectID(bytes: random.bytes(32))!, size: 16_384 + UInt64(random.below(200_000)))
    }
  }

  @Test func oneChunkIsItsOwnReference() {
    let chunk = syntheticChunks(1, seed: 1)[0]
    let tree = ManifestBuilder().build(chunks: [chunk])
    #expect(tree.root == ContentRoot(id: chunk.id, height: 0, size: chunk.size, scheme: .current))
    #expect(tree.nodes.isEmpty)
  }

  @Test func aTreeCoversEveryChunkInOrder() throws {
    let chunks = syntheticChunks(20_000, seed: 2)
    let tree = ManifestBuilder().build(chunks: chunks)
    let byID = Dictionary(tree.nodes.map { ($0.id, $0.node) }, uniquingKeysWith: { a, _ in a })
    func leaves(_ id: ObjectID, height: UInt8) -> [ManifestEntry] {
      let node = byID[id]!
      #expect(node.height == height)
      return height == 1
        ? node.entries : node.entries.flatMap { leaves($0.id, height: height - 1) }
    }
    #expect(tree.root.height >= 2 && tree.root.height <= 4)
    #expect(leaves(tree.root.object, height: tree.root.height) == chunks)
    #expect(tree.root.size == chunks.reduce(0) { $0 + $1.size })
    for (id, node, encoded) in tree.nodes {
      #expect(node.entries.count >= 2 && node.entries.count <= ManifestNode.maximumEntries)
      #expect(try ManifestNode(decoding: encoded) == node)
      #expect(ObjectHasher().id(of: encoded, kind: .node) == id)
    }
    // Children come before their parents, so a hub that has a node has everything under it.
    var seen = Set<ObjectID>()
    for (id, node, _) in tree.nodes {
      if node.height > 1 { #expect(node.entries.allSatisfy { seen.contains($0.id) }) }
      seen.insert(id)
    }
  }

  /// An insertion near the start of a large file rewrites one node per level, not the list.
  @Test func anInsertionNearTheStartChangesOneNodePerLevel() {
    let chunks = syntheticChunks(16_384, seed: 3)
    let before = ManifestBuilder().build(chunks: chunks)
    var edited = chunks
    edited[3] = syntheticChunks(1, seed: 99)[0]
    edited.insert(syntheticChunks(1, seed: 98)[0], at: 4)
    let after = ManifestBuilder().build(chunks: edited)
    let old = Set(before.nodes.map(\.id))
    let new = after.nodes.filter { !old.contains($0.id) }
    #expect(new.count <= 2 * Int(after.root.height), "\(new.count) new nodes")
    #expect(new.reduce(0) { $0 + $1.encoded.count } < 192 << 10)
  }

  @Test func aRangeNeedsOnlyTheEntriesThatOverlapIt() {
    let node = ManifestNode(
      height: 1,
      entries: syntheticChunks(4, seed: 4).enumerated().map {
        ManifestEntry(id: $0.element.id, size: 100)
      })
    #expect(node.entries(overlapping: 0..<1).map(\.start) == [0])
    #expect(node.entries(overlapping: 99..<101).map(\.start) == [0, 100])
    #expect(node.entries(overlapping: 250..<400).map(\.start) == [200, 300])
    #expect(node.entries(overlapping: 400..<500).isEmpty)
  }

  @Test func malformedNodesAreRefused() {
    let good = ManifestNode(height: 1, entries: syntheticChunks(3, seed: 5)).encoded()
    #expect(throws: ManifestError.truncated) { try ManifestNode(decoding: Array(good.dropLast())) }
    #expect(throws: ManifestError.self) { try ManifestNode(decoding: good + [0]) }
    #expect(throws: ManifestError.unknownFormat(2)) {
      try ManifestNode(decoding: [2] + good.dropFirst())
    }
    var zeroHeight = good
    zeroHeight[1] = 0
    #expect(throws: ManifestError.self) { try ManifestNode(decoding: zeroHeight) }
    // A count written with a needless continuation byte: one node must have one encoding.
    var padded = Array(good.prefix(2)) + [0x83, 0x00] + good.dropFirst(3)
    #expect(throws: ManifestError.self) { try ManifestNode(decoding: padded) }
    padded = [1, 1, 0]
    #expect(throws: ManifestError.self) { try ManifestNode(decoding: padded) }
    // An entry of no bytes.
    let empty = ManifestNode(
      height: 1, entries: [ManifestEntry(id: syntheticChunks(1, seed: 6)[0].id, size: 1)])
    var zeroSize = empty.encoded()
    zeroSize[zeroSize.count - 1] = 0
    #expect(throws: ManifestError.self) { try ManifestNode(decoding: zeroSize) }
  }

  /// Whatever a hub or another device sends, decoding answers or refuses, never traps.
  @Test func randomBytesNeverTrapADecoder() {
    var random = TestBytes(seed: 7)
    let good = ManifestNode(height: 2, entries: syntheticChunks(5, seed: 8)).encoded()
    let ref = ContentRoot(
      id: syntheticChunks(1, seed: 9)[0].id, height: 3, size: 1 << 40, scheme: .current
    ).encoded()
    for round in 0..<20_000 {
      var bytes = round % 2 == 0 ? good : ref
      for _ in 0...random.below(4) {
        switch random.below(3) {
        case 0: bytes[random.below(bytes.count)] = UInt8(random.below(256))
        case 1: bytes.removeLast(min(bytes.count - 1, random.below(8)))
        default: bytes.append(contentsOf: random.bytes(random.below(12)))
        }
      }
      _ = try? ManifestNode(decoding: bytes)
      _ = try? ContentRoot(decoding: bytes)
      _ = try? ManifestNode(decoding: random.bytes(random.below(80)))
    }
  }

  @Test func contentReferencesRoundTrip() throws {
    let ref = ContentRoot(
      id: syntheticChunks(1, seed: 10)[0].id, height: 2, size: 1 << 30, scheme: .blake2b)
    #expect(try ContentRoot(decoding: ref.encoded()) == ref)
    #expect(throws: ManifestError.self) { try ContentRoot(decoding: ref.encoded() + [1]) }
    let zero = ContentRoot(id: ref.id, height: 2, size: 0, scheme: .current).encoded()
    #expect(throws: ManifestError.self) { try ContentRoot(decoding: zero) }
  }
}
