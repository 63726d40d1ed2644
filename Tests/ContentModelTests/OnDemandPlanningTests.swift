import ContentModel
import Testing

/// The pure pieces files on demand stand on: which chunks of a partial file are here, and how
/// far past a read to fetch.
@Suite struct OnDemandPlanningTests {
  @Test func presenceCountsInsertsAndRemovesOnce() {
    var presence = ContentPresence(count: 130)
    #expect(presence.isEmpty && !presence.isComplete)
    let inserted = [presence.insert(0), presence.insert(64), presence.insert(129)]
    #expect(inserted == [true, true, true])
    let again = presence.insert(64)
    #expect(!again, "a second insert changes nothing")
    #expect(presence.presentCount == 3)
    #expect(presence.missing(62..<66) == [62, 63, 65])
    presence.remove(64)
    presence.remove(64)
    #expect(presence.presentCount == 2 && !presence.contains(64))
    for index in 0..<130 { presence.insert(index) }
    #expect(presence.isComplete)
    #expect(ContentPresence(count: 0).isComplete, "empty content is whole")
  }

  @Test func presenceRoundTripsAndItsEncodingIsPinned() throws {
    var presence = ContentPresence(count: 10)
    presence.insert(0)
    presence.insert(3)
    presence.insert(9)
    // Format 1, count 10, bits 0 and 3 (0x09), then bit 9 in the second byte (0x02).
    #expect(presence.encoded() == [1, 10, 0x09, 0x02])
    #expect(try ContentPresence(decoding: presence.encoded()) == presence)
    var random = TestBytes(seed: 7)
    for count in [0, 1, 7, 8, 9, 63, 64, 65, 1000] {
      var map = ContentPresence(count: count)
      for index in 0..<count where random.below(2) == 1 { map.insert(index) }
      let decoded = try ContentPresence(decoding: map.encoded())
      #expect(decoded == map && decoded.presentCount == map.presentCount)
    }
  }

  @Test func aMalformedPresenceMapIsRefused() {
    let cases: [[UInt8]] = [
      [],  // nothing
      [2, 1, 0],  // an unknown format
      [1, 10, 0x09],  // too few bytes
      [1, 10, 0x09, 0x02, 0],  // bytes after
      [1, 10, 0x09, 0x04],  // bit 10 of 10 chunks
      [1, 0xff, 0xff, 0xff, 0xff, 0x7f],  // a count far too large
    ]
    for bytes in cases {
      #expect(throws: ManifestError.self) { try ContentPresence(decoding: bytes) }
    }
  }

  /// The windows `window` plans for `reads`, one after the other.
  func plans(_ window: ReadAheadWindow, _ reads: [Range<UInt64>], size: UInt64) -> [Range<UInt64>] {
    var window = window
    return reads.map { window.plan($0, size: size) }
  }

  @Test func readAheadGrowsOnSequentialReadsAndStopsOnAJump() {
    let mib: UInt64 = 1 << 20
    let middle: UInt64 = 512 * mib
    let reads: [Range<UInt64>] = [
      // A cp: reads of 128 KiB, one after the other.
      0..<131_072, 131_072..<262_144, 262_144..<393_216, 393_216..<524_288, 524_288..<655_360,
      // A jump to the middle (a database, a seek in a video), then reads from there.
      middle..<middle + 4096, middle + 4096..<middle + 8192,
    ]
    let expected: [Range<UInt64>] = [
      0..<131_072 + mib, 131_072..<262_144 + 2 * mib, 262_144..<393_216 + 4 * mib,
      393_216..<524_288 + 8 * mib, 524_288..<655_360 + 8 * mib,
      middle..<middle + 4096, middle + 4096..<middle + 8192 + mib,
    ]
    #expect(
      plans(ReadAheadWindow(initial: mib, maximum: 8 * mib), reads, size: 1 << 30) == expected)
  }

  @Test func readAheadNeverPassesTheEnd() {
    #expect(
      plans(.standard, [0..<4096, 4096..<20_000], size: 10_000) == [0..<10_000, 4096..<10_000])
    #expect(
      plans(.standard, [0..<1, 1..<UInt64.max - 1], size: .max) == [
        0..<1 + (1 << 20), 1..<UInt64.max,
      ])
  }
}
