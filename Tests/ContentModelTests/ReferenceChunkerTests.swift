import Testing

@testable import ContentModel

/// The two-bytes-a-step loop against FastCDC written plainly, one byte a step.
@Suite struct ReferenceChunkerTests {
  func referenceCut(_ bytes: [UInt8], chunker: ContentChunker) -> Int {
    let p = chunker.parameters
    if bytes.count <= p.minimum { return bytes.count }
    let limit = min(bytes.count, p.maximum)
    var hash: UInt64 = 0
    for index in p.minimum..<limit {
      hash = (hash &<< 1) &+ chunker.gear.words[Int(bytes[index])]
      let mask = index < min(limit, p.average) ? p.maskBefore : p.maskAfter
      if hash & mask == 0 { return index + 1 }
    }
    return limit
  }

  @Test func cutsWhereThePlainAlgorithmCuts() {
    var random = TestBytes(seed: 11)
    let chunker = ContentChunker()
    for round in 0..<300 {
      // Short, odd and even lengths around every threshold, and long random runs.
      let length =
        round < 100
        ? [16_383, 16_384, 16_385, 65_535, 65_536, 65_537, 262_143, 262_144, 262_145, 300_001][
          round % 10] : random.below(600_000)
      var bytes = random.bytes(length)
      if round % 3 == 0 { for index in bytes.indices where index % 7 != 0 { bytes[index] = 0 } }
      let cut = bytes.withUnsafeBytes { chunker.cut($0, isFinal: true) }
      #expect(
        cut == (bytes.isEmpty ? nil : referenceCut(bytes, chunker: chunker)), "round \(round)")
    }
  }
}
