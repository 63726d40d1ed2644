import ContentModel
import Testing

@Suite struct ChunkerTests {
  func entries(_ bytes: [UInt8], keys: ContentKeys = .plain) -> [ManifestEntry] {
    var splitter = ContentSplitter(
      chunker: ContentChunker(keys: keys), hasher: ObjectHasher(keys: keys))
    bytes.withUnsafeBytes { splitter.append($0) { _, _ in } }
    return splitter.finish { _, _ in }
  }

  @Test func sizesStayWithinBoundsAndAverageNearTheTarget() {
    var random = TestBytes(seed: 1)
    let data = random.bytes(32 << 20)
    let chunks = entries(data)
    let parameters = ChunkingParameters.standard
    #expect(chunks.reduce(0) { $0 + $1.size } == UInt64(data.count))
    for chunk in chunks.dropLast() {
      #expect(chunk.size >= UInt64(parameters.minimum) && chunk.size <= UInt64(parameters.maximum))
    }
    let average = data.count / chunks.count
    // Normalized chunking with a 16 KiB minimum lands a little above the 64 KiB target.
    #expect(average > 48 << 10 && average < 96 << 10, "average \(average)")
  }

  @Test func smallContentIsOneChunkAndEmptyContentIsTheChunkOfNoBytes() {
    let small = entries(Array("hello".utf8))
    #expect(small.count == 1 && small[0].size == 5)
    #expect(small[0].id == ObjectHasher().id(of: Array("hello".utf8), kind: .chunk))
    let empty = entries([])
    #expect(empty.count == 1 && empty[0].size == 0)
  }

  @Test func feedingInPiecesCutsAsFeedingWhole() {
    var random = TestBytes(seed: 2)
    let data = random.bytes(3 << 20)
    let whole = entries(data)
    var splitter = ContentSplitter()
    var offset = 0
    var emitted: [UInt8] = []
    while offset < data.count {
      let size = min(data.count - offset, 1 + random.below(700_000))
      data[offset..<(offset + size)].withUnsafeBytes {
        splitter.append($0) { bytes, _ in emitted.append(contentsOf: bytes) }
      }
      offset += size
    }
    let pieces = splitter.finish { bytes, _ in emitted.append(contentsOf: bytes) }
    #expect(pieces == whole)
    #expect(emitted == data, "the chunks handed out are the content, in order")
  }

  /// Buffers of a fixed size, as a copy hands them over, around the largest chunk: each seam
  /// between two buffers is cut as if the content came whole.
  @Test(arguments: [4096, 65_536, 262_143, 262_144, 262_145, 600_000, 4 << 20])
  func feedingInBuffersOfOneSizeCutsAsFeedingWhole(size: Int) {
    var random = TestBytes(seed: 9)
    let data = random.bytes(10 << 20)
    let whole = entries(data)
    var splitter = ContentSplitter()
    var emitted: [UInt8] = []
    for start in stride(from: 0, to: data.count, by: size) {
      data[start..<min(start + size, data.count)].withUnsafeBytes {
        splitter.append($0) { bytes, _ in emitted.append(contentsOf: bytes) }
      }
    }
    #expect(splitter.finish { bytes, _ in emitted.append(contentsOf: bytes) } == whole)
    #expect(emitted == data)
  }

  /// The property the chunker exists for: an edit changes the chunks around it, no others.
  @Test func anEditChangesOnlyTheChunksAroundIt() {
    var random = TestBytes(seed: 3)
    let data = random.bytes(16 << 20)
    let before = Set(entries(data).map(\.id))
    for round in 0..<10 {
      var edited = data
      let offset = random.below(data.count)
      if round % 2 == 0 {
        edited[offset] ^= 0xff
      } else {
        edited.insert(UInt8(round), at: offset)
      }
      let after = entries(edited)
      let new = after.filter { !before.contains($0.id) }
      #expect(new.count <= 3, "round \(round): \(new.count) new chunks")
      #expect(new.reduce(0) { $0 + $1.size } <= 3 * 256 << 10)
    }
  }

  @Test func aKeyedLibraryCutsAndNamesDifferently() {
    var random = TestBytes(seed: 4)
    let data = random.bytes(4 << 20)
    let keys = ContentKeys(librarySecret: random.bytes(32))
    let plain = entries(data)
    let keyed = entries(data, keys: keys)
    #expect(Set(plain.map(\.id)).isDisjoint(with: keyed.map(\.id)))
    #expect(plain.map(\.size) != keyed.map(\.size), "boundaries depend on the key")
    #expect(entries(data, keys: keys) == keyed, "and are the same on every device")
  }

  @Test func aChunkAndANodeOfTheSameBytesHaveDifferentIds() {
    let bytes = Array("same bytes".utf8)
    #expect(ObjectHasher().id(of: bytes, kind: .chunk) != ObjectHasher().id(of: bytes, kind: .node))
  }
}
