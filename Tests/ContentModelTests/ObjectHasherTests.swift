import CBlake3
import ContentModel
import DocumentModel
import Testing

/// Object ids are a format: these values, computed apart from docsync (Python's `blake3`
/// package and libsodium's BLAKE2b), pin them, so that a change that would split every
/// library's objects in two fails here first.
@Suite struct ObjectHasherTests {
  func hex(_ id: ObjectID) -> String { id.hex }

  @Test func debiansBlake3HashesAsTheSpecificationSays() {
    var hasher = blake3_hasher()
    blake3_hasher_init(&hasher)
    var out = [UInt8](repeating: 0, count: 32)
    blake3_hasher_finalize(&hasher, &out, 32)
    #expect(
      out.map { String(format: "%02x", $0) }.joined()
        == "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262")
  }

  @Test func blake3IdsAreKeyedByKindAndLibrary() {
    let hello = Array("hello".utf8)
    let plain = ObjectHasher(scheme: .blake3)
    #expect(
      hex(plain.id(of: hello, kind: .chunk))
        == "3a96bc968cff3a9dc303d0d762f3d5a65223ebd03c1296b108ea995d342ca6e3")
    #expect(
      hex(plain.id(of: hello, kind: .node))
        == "5627c1629af78c9f39f2a40f73e79668d2099c7d7871fa305b02d0fc6854f2bd")
    #expect(ObjectHasher().id(of: hello, kind: .chunk) == plain.id(of: hello, kind: .chunk))
  }

  @Test func blake2bIdsOfTreesRecordedBeforeStayAsTheyWere() throws {
    // The id sessions 40 to 44 gave "hello" as a chunk.
    let legacy = ObjectHasher(scheme: .blake2b)
    let id = legacy.id(of: Array("hello".utf8), kind: .chunk)
    #expect(hex(id) == "ca97000617ea3d5a1027e6aa113cf2cb6d582fe94e13c09575b1336a9640438c")
    let tree = ManifestBuilder(hasher: legacy).build(chunks: [ManifestEntry(id: id, size: 5)])
    #expect(tree.root.scheme == .blake2b)
    #expect(try ContentRoot(decoding: tree.root.encoded()) == tree.root)
  }

  @Test func aLargeInputHashesAlikeWholeAndThroughEveryKernel() {
    // 1 MiB crosses BLAKE3's SIMD paths (many 1 KiB chunks at once); the same bytes as one
    // slice and as a copy must agree, and differ from a one-byte change.
    var random = TestBytes(seed: 7)
    var data = random.bytes(1 << 20)
    let hasher = ObjectHasher()
    let first = hasher.id(of: data, kind: .chunk)
    #expect(data.withUnsafeBytes { hasher.id(of: $0, kind: .chunk) } == first)
    data[123_456] ^= 1
    #expect(hasher.id(of: data, kind: .chunk) != first)
  }
}
