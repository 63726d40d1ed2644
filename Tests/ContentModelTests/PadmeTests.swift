import ContentModel
import Testing

@Suite struct PadmeTests {
  @Test func sizesAreThePapersPinnedFromAReferenceImplementation() {
    // From Tools/key-vectors.py, which follows the paper's pseudocode.
    let expected: [(Int, Int)] = [
      (0, 0), (1, 1), (2, 2), (3, 3), (7, 7), (8, 8), (9, 10), (100, 104), (129, 144),
      (1000, 1024), (65537, 67584), (66536, 67584), (262145, 270336), (1_060_921, 1_081_344),
    ]
    for (length, padded) in expected { #expect(Padme.size(length) == padded, "\(length)") }
  }

  @Test func theOverheadStaysWithinTwelvePercentForEverySize() {
    var worst = 0.0
    // Every size up to 1 MiB + 1, then sampled sizes up to 2^40 (where the bits kept grow).
    var sizes = Array(1...(1 << 20) + 1)
    var random = TestBytes(seed: 12)
    for _ in 0..<100_000 { sizes.append(1 + random.below(1 << 40)) }
    for length in sizes {
      let padded = Padme.size(length)
      #expect(padded >= length)
      let overhead = Double(padded - length) / Double(length)
      worst = max(worst, overhead)
      if overhead > 0.12 { Issue.record("\(length) pads to \(padded)") }
    }
    #expect(worst > 0.11)  // the bound is reached, not just respected
    #expect(worst <= 0.12)
  }

  @Test func paddedSizesAreFewAndRise() {
    // The point of PADMÉ: the sizes from 64 KiB to 128 KiB become 33, 2 KiB apart.
    let sizes = Set((65536..<131072).map(Padme.size))
    #expect(sizes.count == 33)
    #expect(sizes.allSatisfy { $0 % 2048 == 0 })
    var previous = 0
    for length in stride(from: 0, to: 1 << 22, by: 7) {
      let padded = Padme.size(length)
      #expect(padded >= previous)
      previous = padded
    }
  }

  @Test func paddingComesOffExactly() {
    var random = TestBytes(seed: 3)
    for length in [0, 1, 2, 15, 16, 17, 127, 128, 129, 1000, 65535, 65536, 70000] {
      var message = random.bytes(length)
      if length > 0 { message[length - 1] = 0 }  // a message ending in zeros
      let padded = Padme.padded(message)
      #expect(padded.count == Padme.size(length + 1))
      #expect(padded.withUnsafeBytes { Padme.unpaddedLength($0) } == length)
    }
    #expect([UInt8](repeating: 0, count: 8).withUnsafeBytes { Padme.unpaddedLength($0) } == nil)
    #expect([UInt8]([1, 0, 0]).withUnsafeBytes { Padme.unpaddedLength($0) } == nil)
  }
}
