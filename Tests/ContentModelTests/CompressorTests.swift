import ContentModel
import Testing

@Suite struct CompressorTests {
  @Test func textIsStoredCompressedAndComesBackExactly() throws {
    let text = Array(
      String(repeating: "the quick brown fox jumps over the lazy dog\n", count: 1500).utf8)
    let compressor = ObjectCompressor()
    let framed = compressor.frame(text)
    #expect(framed[0] == ObjectFrame.zstd.rawValue)
    #expect(framed.count < text.count / 10)
    #expect(try compressor.plain(framed, maximumSize: 1 << 18) == text)
  }

  @Test func incompressibleBytesAreStoredRawWithOneByteMore() throws {
    var random = TestBytes(seed: 1)
    let bytes = random.bytes(65_536)
    let compressor = ObjectCompressor()
    let framed = compressor.frame(bytes)
    #expect(framed[0] == ObjectFrame.raw.rawValue && framed.count == bytes.count + 1)
    #expect(try compressor.plain(framed, maximumSize: 1 << 18) == bytes)
    #expect(try compressor.plain(compressor.frame([]), maximumSize: 0) == [])
  }

  @Test func framesThatAreUnknownDamagedOrTooLargeAreRefused() {
    let compressor = ObjectCompressor()
    let zeros = [UInt8](repeating: 0, count: 1 << 20)
    let framed = compressor.frame(zeros)
    #expect(throws: ManifestError.tooLarge(1 << 20)) {
      try compressor.plain(framed, maximumSize: 256 << 10)
    }
    #expect(throws: ManifestError.unknownFormat(0x81)) {
      try compressor.plain([0x81, 1, 2, 3], maximumSize: 10)
    }
    #expect(throws: ManifestError.truncated) { try compressor.plain([], maximumSize: 10) }
    var damaged = compressor.frame(Array(String(repeating: "abc", count: 1000).utf8))
    damaged.removeLast(3)
    #expect(throws: ManifestError.self) { try compressor.plain(damaged, maximumSize: 1 << 20) }
  }
}
