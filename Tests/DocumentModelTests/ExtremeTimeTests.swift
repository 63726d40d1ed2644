import DocumentModel
import Testing

/// Every time a program, a disk or another device can hand docsync: converted, clocked,
/// recorded and named without a trap, and kept exactly inside the documented range.
@Suite("extreme times never trap")
struct ExtremeTimeTests {
  /// SplitMix64: a fixed seed, so a failure repeats.
  struct Generator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
  }

  /// Second counts at and around every boundary: the ends of Int64, of Int64 nanoseconds
  /// (1677 and 2262), of 32-bit time (1901, 2038), of ext4 (2446), and the dates of issue 45.
  static let edgeSeconds: [Int64] = {
    let limit = Int64.max / 1_000_000_000
    let anchors: [Int64] = [
      .min, .max, 0, limit, -limit, limit + 1, -limit - 1, Int64(Int32.min), Int64(Int32.max),
      -62_167_219_200,  // year 0
      17_179_869_183,  // 2514-05-30T01:53:03Z, the crash of issue 45
      16_447_447_039,  // 2491
      7_952_342_400,  // 2222
      67_767_976_233_532_799,  // the last second of year 2147483647
      -2_208_988_800,  // 1900
    ]
    return anchors.flatMap { [$0, $0 &+ 1, $0 &- 1] }
  }()

  static let edgeNanoseconds: [Int64] = [0, 1, 999_999_999, 854_775_807, 854_775_808, 145_224_192]

  static func exact(_ seconds: Int64, _ nanoseconds: Int64) -> Int64 {
    let wide = Int128(seconds) * 1_000_000_000 + Int128(nanoseconds)
    return Int64(clamping: wide)
  }

  @Test func everyTimespecIsKeptExactlyOrClampedToTheNearerEnd() {
    var random = Generator(state: 45)
    var cases: [(Int64, Int64)] = []
    for seconds in Self.edgeSeconds {
      for nanoseconds in Self.edgeNanoseconds { cases.append((seconds, nanoseconds)) }
    }
    for _ in 0..<200_000 {
      let seconds = Int64(bitPattern: random.next())
      // Small magnitudes too: the range people use, where nothing may be clamped.
      let near = Int64.random(in: -20_000_000_000...20_000_000_000, using: &random)
      cases.append((seconds, Int64.random(in: 0..<1_000_000_000, using: &random)))
      cases.append((near, Int64.random(in: 0..<1_000_000_000, using: &random)))
    }
    for (seconds, nanoseconds) in cases {
      let kept = EpochNanoseconds.clamped(seconds: seconds, nanoseconds: nanoseconds)
      #expect(kept == Self.exact(seconds, nanoseconds), "\(seconds).\(nanoseconds)")
      let (back, fraction) = EpochNanoseconds.split(kept)
      #expect((0..<1_000_000_000).contains(fraction))
      #expect(EpochNanoseconds.clamped(seconds: back, nanoseconds: fraction) == kept)
      if kept != EpochNanoseconds.earliest && kept != EpochNanoseconds.latest {
        #expect(back == seconds && fraction == nanoseconds)
      }
      let wall = EpochNanoseconds.wallMilliseconds(kept)
      #expect(kept <= 0 ? wall == 0 : Int128(wall) == Int128(kept) / 1_000_000)
    }
  }

  @Test func theEndsAreTheDocumentedDates() {
    let earliest = HLCTimestamp(wallMilliseconds: 0)
    #expect(earliest.isoString == "1970-01-01T00:00:00Z")
    #expect(EpochNanoseconds.split(EpochNanoseconds.earliest) == (-9_223_372_037, 145_224_192))
    #expect(EpochNanoseconds.split(EpochNanoseconds.latest) == (9_223_372_036, 854_775_807))
    let latest = HLCTimestamp(
      wallMilliseconds: EpochNanoseconds.wallMilliseconds(EpochNanoseconds.latest))
    #expect(latest.isoString == "2262-04-11T23:47:16Z")
    #expect(EpochNanoseconds.from(wallMilliseconds: .max) == EpochNanoseconds.latest)
    #expect(EpochNanoseconds.from(wallMilliseconds: 1_500) == 1_500_000_000)
  }

  /// The hybrid clock fed extreme wall clocks and extreme remote times: it never traps, never
  /// issues a time beyond what a record may carry, and never goes back.
  @Test func theHybridClockTakesAnyWallClockAndAnyRemoteTime() {
    var random = Generator(state: 0x2514)
    let walls: [UInt64] = [
      0, 1, .max, .max - 1, HLCTimestamp.maximumWallMilliseconds,
      HLCTimestamp.maximumWallMilliseconds + 1, UInt64(Int64.max), 17_179_869_183_000,
    ]
    for round in 0..<2_000 {
      var clock = HybridLogicalClock(
        latest: HLCTimestamp(
          wallMilliseconds: min(
            walls[round % walls.count], HLCTimestamp.maximumWallMilliseconds),
          counter: round % 3 == 0 ? .max : UInt32(truncatingIfNeeded: random.next())))
      var previous = clock.latest
      for _ in 0..<20 {
        let now = random.next() % 4 == 0 ? walls.randomElement(using: &random)! : random.next()
        let issued: HLCTimestamp
        if random.next() % 2 == 0 {
          issued = clock.tick(now: now)
        } else {
          let remote = HLCTimestamp(
            wallMilliseconds: walls.randomElement(using: &random)!,
            counter: UInt32(truncatingIfNeeded: random.next()))
          issued = clock.receive(remote: remote, now: now)
        }
        #expect(issued >= previous)
        #expect(issued.wallMilliseconds <= HLCTimestamp.maximumWallMilliseconds)
        _ = issued.nanosecondsSinceEpoch
        _ = issued.versionsTimeString
        previous = issued
      }
    }
  }

  /// A record carrying the most extreme file time and clock time: encoded, decoded, checked
  /// and named without a trap; a time past what docsync keeps is refused, not stored.
  @Test func recordsWithExtremeTimesRoundTripOrAreRefused() throws {
    let author = device(7)
    for contentTime in [Int64.min, .max, 0, -1, Int64.min + 1, -2_208_988_800_000_000_000] {
      for wall in [0, HLCTimestamp.maximumWallMilliseconds, .max] as [UInt64] {
        let record = VersionRecord(
          path: path("far/away.txt"), content: fileContent("x"), parents: [],
          modified: HLCTimestamp(wallMilliseconds: wall, counter: .max),
          deviceID: author.deviceID, deviceName: author.deviceName, contentTime: contentTime)
        let decoded = try VersionRecord(decoding: record.encoded, expectedID: record.id)
        #expect(decoded.contentTime == contentTime)
        _ = VersionsName.name(for: decoded)
        let problem = RecordCheck.problem(with: decoded, now: .max) { _ in nil }
        if wall > HLCTimestamp.maximumWallMilliseconds {
          #expect(problem == .timeOutOfRange(decoded.modified))
        } else {
          #expect(problem == nil)
        }
      }
    }
  }
}
