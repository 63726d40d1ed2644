import ContentModel
import Testing

@Suite struct RecoveryKeyTests {
  /// The key of bytes 0, 1, …, 19, as `Tools/key-vectors.py` writes it.
  let pinned = "000GC-40R4Y-0M301-E209M-185G2-R38EE-1W810-24GKG"

  @Test func aKeyReadsBackFromItsTextAsPeopleTypeIt() throws {
    let key = try RecoveryKey(parsing: pinned)
    #expect(key.bytes == Array(0..<20))
    #expect(key.text == pinned)
    // Lower case, spaces instead of hyphens, O for 0, L and I for 1.
    let typed = "ooOgc 4or4y 0m3OL e2o9m 185g2 r38ee iw8io 24gkg"
    #expect(try RecoveryKey(parsing: typed) == key)
    for _ in 0..<200 {
      let random = RecoveryKey.random()
      #expect(random.text.count == 47)
      #expect(try RecoveryKey(parsing: random.text) == random)
    }
  }

  @Test func everyOneCharacterTypoIsNamedWithItsGroup() {
    let characters = Array(pinned)
    let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    for index in characters.indices where characters[index] != "-" {
      for replacement in alphabet where replacement != characters[index] {
        var typed = characters
        typed[index] = replacement
        #expect(throws: KeyError.malformedRecoveryKey("group \(index / 6 + 1) has a typo")) {
          try RecoveryKey(parsing: String(typed))
        }
      }
    }
  }

  @Test func swappedNeighboursAndGroupsAreCaught() {
    var random = TestBytes(seed: 9)
    for _ in 0..<300 {
      let text = Array(RecoveryKey.random().text)
      // Two neighbouring key characters of one group (the fifth is its check).
      let group = random.below(8)
      let offset = group * 6 + random.below(3)
      var swapped = text
      swapped.swapAt(offset, offset + 1)
      if swapped != text {
        #expect(throws: KeyError.self) { try RecoveryKey(parsing: String(swapped)) }
      }
      // Two whole groups.
      let other = (group + 1 + random.below(7)) % 8
      var groups = String(text).split(separator: "-").map(String.init)
      if groups[group] != groups[other] {
        groups.swapAt(group, other)
        #expect(throws: KeyError.self) { try RecoveryKey(parsing: groups.joined(separator: "-")) }
      }
    }
  }

  @Test func whatIsNoKeyAtAllSaysWhy() {
    #expect(throws: KeyError.malformedRecoveryKey("it has 40 characters besides hyphens, not 39")) {
      try RecoveryKey(parsing: String(pinned.dropLast()))
    }
    #expect(throws: KeyError.malformedRecoveryKey("“U” is not one of its characters")) {
      try RecoveryKey(parsing: "U" + pinned.dropFirst())
    }
    #expect(
      KeyError.malformedRecoveryKey("group 3 has a typo").description
        == "that is not a recovery key: group 3 has a typo")
    #expect(!"\(RecoveryKey.random())".contains("-"))
  }
}
