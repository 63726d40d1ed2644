import Testing

@testable import Hub

@Suite("The SQLite hub's object check")
struct ObjectCheckTests {
  /// Bytes 0, 1, ... 255 three times, then "xyz": longer than a stripe, with a tail of every
  /// length class (8, 4 and single bytes).
  static let long = (0..<3).flatMap { _ in (0...255).map { UInt8($0) } } + Array("xyz".utf8)

  // Expected values from the reference implementation, Debian's libxxhash 0.8.1 (XXH64 through
  // Python's ctypes).
  @Test func xxHash64MatchesTheReference() {
    #expect(XXHash64.hash([]) == 0xEF46_DB37_51D8_E999)
    #expect(XXHash64.hash(Array("a".utf8)) == 0xD24E_C4F1_A98C_6E5B)
    #expect(XXHash64.hash(Array("abc".utf8)) == 0x44BC_2CF5_AD77_0999)
    #expect(
      XXHash64.hash(Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)) == 0x6919_6C1B_3AF0_BFF9)
    #expect(XXHash64.hash(Self.long) == 0xE921_A1B4_5BD7_79F8)
    #expect(XXHash64.hash([], seed: 2_654_435_761) == 0xAC75_FDA2_929B_17EF)
    #expect(XXHash64.hash(Self.long, seed: 2_654_435_761) == 0xF4D7_0D6F_815A_5B88)
  }

  @Test func newChecksAreTaggedXXHash64() {
    let check = ObjectCheck.of(Self.long)
    #expect(check.count == 9)
    #expect(check[0] == ObjectCheck.xxHash64Tag)
    #expect(Array(check.dropFirst()) == [0xF8, 0x79, 0xD7, 0x5B, 0xB4, 0xA1, 0x21, 0xE9])
    #expect(ObjectCheck.matches(Self.long, check))
  }

  @Test func aFlippedByteFailsEitherKindOfCheck() {
    for check in [ObjectCheck.of(Self.long), ObjectCheck.blake2b(Self.long)] {
      #expect(ObjectCheck.matches(Self.long, check))
      for position in [0, 100, Self.long.count - 1] {
        var damaged = Self.long
        damaged[position] ^= 0x01
        #expect(!ObjectCheck.matches(damaged, check))
      }
      #expect(!ObjectCheck.matches(Array(Self.long.dropLast()), check))
    }
  }

  @Test func aCheckOfUnknownKindFails() {
    var check = ObjectCheck.of(Self.long)
    check[0] = 2
    #expect(!ObjectCheck.matches(Self.long, check))
    #expect(!ObjectCheck.matches(Self.long, []))
    #expect(!ObjectCheck.matches(Self.long, Array(ObjectCheck.of(Self.long).prefix(5))))
  }
}
