import ContentModel
import DocumentModel
import Testing

/// A device's view of a hub: the stored frames by id, filled the way an upload fills them.
struct FrameStore {
  var frames: [ObjectID: [UInt8]] = [:]
  let compressor = ObjectCompressor()

  /// Splits `content`, stores each chunk's and node's frame, and returns the root.
  mutating func put(_ content: [UInt8]) -> ContentRoot {
    var splitter = ContentSplitter()
    var framed: [ObjectID: [UInt8]] = [:]
    content.withUnsafeBytes { bytes in
      splitter.append(bytes) { chunk, entry in framed[entry.id] = compressor.frame(chunk) }
    }
    let entries = splitter.finish { chunk, entry in framed[entry.id] = compressor.frame(chunk) }
    let tree = ManifestBuilder().build(chunks: entries)
    for (id, _, encoded) in tree.nodes { framed[id] = compressor.frame(encoded) }
    frames.merge(framed) { old, _ in old }
    return tree.root
  }

  /// The bytes of `range` of the content under `root`, every object checked.
  func read(_ root: ContentRoot, _ range: Range<UInt64>) throws(ManifestError) -> [UInt8] {
    let verifier = ObjectVerifier()
    let chunks = try ContentWalk(root: root).chunks(overlapping: range) {
      (entry, height) throws(ManifestError) in
      try verifier.node(frames[entry.id] ?? [], for: entry, height: height)
    }
    var out: [UInt8] = []
    for (entry, start) in chunks {
      let plain = try verifier.chunk(frames[entry.id] ?? [], for: entry)
      let from = Int(max(range.lowerBound, start) - start)
      let to = Int(min(range.upperBound, start + entry.size) - start)
      out += plain[from..<max(from, to)]
    }
    return out
  }
}

@Suite struct VerifierTests {
  @Test func aChunkCheckedLaterIsCheckedForItsSizeNowAndItsIdByTheCaller() throws {
    let compressor = ObjectCompressor()
    let verifier = ObjectVerifier()
    let bytes = Array(repeating: UInt8(3), count: 5000)
    let entry = ManifestEntry(id: verifier.hasher.id(of: bytes, kind: .chunk), size: 5000)
    let other = Array(repeating: UInt8(4), count: 5000)
    // Other bytes of the right size pass now (the whole content's hash refuses them later)...
    #expect(try verifier.chunkCheckedLater(compressor.frame(other), for: entry) == other)
    // ...where the full check refuses them at once.
    #expect(throws: ManifestError.self) { try verifier.chunk(compressor.frame(other), for: entry) }
    // A size other than the one named is refused now, as is a frame that is no frame.
    #expect(throws: ManifestError.self) {
      try verifier.chunkCheckedLater(compressor.frame(Array(bytes.dropLast())), for: entry)
    }
    #expect(throws: ManifestError.self) {
      try verifier.chunkCheckedLater([0xFF, 1, 2], for: entry)
    }
    #expect(try verifier.chunkCheckedLater(compressor.frame(bytes), for: entry) == bytes)
  }

  @Test func wholeContentAndAnyRangeReadBackExactly() throws {
    var random = TestBytes(seed: 21)
    var store = FrameStore()
    let content = random.bytes(6 << 20) + Array(repeating: 7, count: 1 << 20)
    let root = store.put(content)
    #expect(root.height >= 1 && root.size == UInt64(content.count))
    #expect(try store.read(root, 0..<root.size) == content)
    for _ in 0..<40 {
      let a = UInt64(random.below(content.count))
      let b = min(UInt64(content.count), a + UInt64(random.below(600_000)))
      #expect(try store.read(root, a..<b) == Array(content[Int(a)..<Int(b)]))
    }
    // Past the end is clamped; small and empty content are one chunk.
    #expect(try store.read(root, root.size..<(root.size + 10)) == [])
    let small = store.put(Array("small".utf8))
    #expect(small.height == 0)
    #expect(try store.read(small, 1..<3) == Array("ma".utf8))
    let empty = store.put([])
    #expect(try store.read(empty, 0..<0) == [])
  }

  @Test func aDamagedSwappedOrForgedObjectIsRefused() throws {
    var random = TestBytes(seed: 22)
    var store = FrameStore()
    let root = store.put(random.bytes(2 << 20))
    let other = store.put(random.bytes(1 << 20))
    let chunks = try ContentWalk(root: root).chunks(overlapping: 0..<root.size) {
      (entry, height) throws(ManifestError) in
      try ObjectVerifier().node(store.frames[entry.id]!, for: entry, height: height)
    }
    // A flipped byte in a stored chunk.
    var damaged = store
    var frame = damaged.frames[chunks[3].entry.id]!
    frame[frame.count / 2] ^= 1
    damaged.frames[chunks[3].entry.id] = frame
    #expect(throws: ManifestError.self) { try damaged.read(root, 0..<root.size) }
    // Another good chunk handed out under this one's id.
    var swapped = store
    swapped.frames[chunks[1].entry.id] = store.frames[chunks[2].entry.id]
    #expect(throws: ManifestError.self) { try swapped.read(root, 0..<root.size) }
    // Another version's root node in place of this one's.
    var rolledBack = store
    rolledBack.frames[root.object] = store.frames[other.object]
    #expect(throws: ManifestError.self) { try rolledBack.read(root, 0..<10) }
    // A reference that lies about the size or the height of what it names.
    let lying = ContentRoot(
      id: root.id, height: root.height, size: root.size + 1, scheme: root.scheme)
    #expect(throws: ManifestError.self) { try store.read(lying, 0..<10) }
    let taller = ContentRoot(
      id: root.id, height: root.height + 1, size: root.size, scheme: root.scheme)
    #expect(throws: ManifestError.self) { try store.read(taller, 0..<10) }
    // A missing object is refused too, never read as zeros.
    var missing = store
    missing.frames[chunks[0].entry.id] = nil
    #expect(throws: ManifestError.self) { try missing.read(root, 0..<10) }
    #expect(try store.read(root, 0..<root.size).count == Int(root.size))
  }
}
