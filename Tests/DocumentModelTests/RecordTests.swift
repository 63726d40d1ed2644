import DocumentModel
import Testing

@Suite struct RecordTests {
  @Test func idIsHashOfCanonicalEncodingAndRoundTrips() throws {
    var set = VersionSet()
    var a = device(1)
    let base = make(&a, &set, "notes/plan.md", fileContent("one"))
    let record = make(
      &a, &set, "notes/plan.md", fileContent("two", executable: true), parents: [base])
    #expect(record.id.hex.count == 64)
    #expect(record.id.shortHex == String(record.id.hex.prefix(6)))
    #expect(record.id.bytes.count == 32)
    #expect(record.id.hex == record.id.hex.lowercased())
    let decoded = try VersionRecord(decoding: record.encoded, expectedID: record.id)
    #expect(decoded.id == record.id)
    #expect(decoded.content == record.content)
    #expect(decoded.parents == [base.id])
    #expect(decoded.path == record.path)
    #expect(decoded.deviceName == record.deviceName)
    try Integrity.verify(decoded)
  }

  @Test func parentsAreSortedSoOrderDoesNotChangeTheID() {
    let p1 = VersionID(Digest256.sha256(Array("a".utf8)))
    let p2 = VersionID(Digest256.sha256(Array("b".utf8)))
    func build(_ parents: [VersionID]) -> VersionRecord {
      VersionRecord(
        path: path("x"), content: .deletion, parents: parents,
        modified: HLCTimestamp(wallMilliseconds: 5), deviceID: DeviceID(high: 0, low: 1),
        deviceName: "d")
    }
    #expect(build([p1, p2]).id == build([p2, p1]).id)
    #expect(build([p1, p2, p1]).parents.count == 2)
    #expect(build([p1]).id != build([p2]).id)
  }

  @Test func everyKindRoundTrips() throws {
    let target = Array("../elsewhere".utf8)
    let contents: [VersionContent] = [
      fileContent("x"), .directory, .deletion,
      .symlink(hash: ContentHash(of: target), size: UInt64(target.count)),
    ]
    for content in contents {
      let record = VersionRecord(
        path: path("a/b"), content: content, parents: [],
        modified: HLCTimestamp(wallMilliseconds: 7, counter: 3),
        deviceID: DeviceID(high: 9, low: 1),
        deviceName: "dev", origin: RenameOrigin(path: path("old"), version: VersionID(.sha256([1])))
      )
      let decoded = try VersionRecord(decoding: record.encoded, expectedID: record.id)
      #expect(decoded.content == content)
      #expect(decoded.kind == content.kind)
      #expect(decoded.origin == record.origin)
      #expect(decoded.modified == record.modified)
    }
  }

  @Test func corruptedRecordIsRefused() {
    let record = VersionRecord(
      path: path("doc.txt"), content: fileContent("hello"), parents: [],
      modified: HLCTimestamp(wallMilliseconds: 1), deviceID: DeviceID(high: 0, low: 1),
      deviceName: "d")
    for index in [0, 10, record.encoded.count / 2, record.encoded.count - 1] {
      var bytes = record.encoded
      bytes[index] ^= 0x01
      #expect(throws: IntegrityError.recordHashMismatch(expected: record.id)) {
        try VersionRecord(decoding: bytes, expectedID: record.id)
      }
    }
    let otherID = VersionID(.sha256([0]))
    #expect(throws: IntegrityError.self) {
      try VersionRecord(decoding: record.encoded, expectedID: otherID)
    }
    let forged = VersionRecord(
      storedID: record.id, path: path("doc.txt"), content: fileContent("evil"), parents: [],
      modified: record.modified, deviceID: record.deviceID, deviceName: record.deviceName,
      origin: nil)
    #expect(throws: IntegrityError.recordHashMismatch(expected: record.id)) {
      try Integrity.verify(forged)
    }
  }

  @Test func nonCanonicalBytesWithMatchingHashAreRefused() {
    // Trailing garbage hashed under its own id: the hash matches, the form does not.
    let record = VersionRecord(
      path: path("doc"), content: .directory, parents: [],
      modified: HLCTimestamp(wallMilliseconds: 1), deviceID: DeviceID(high: 0, low: 1),
      deviceName: "d")
    let bytes = record.encoded + [0]
    let id = VersionID(.sha256(bytes))
    #expect(throws: IntegrityError.malformedRecord(id)) {
      try VersionRecord(decoding: bytes, expectedID: id)
    }
  }

  @Test(arguments: ObjectIDScheme.allCases)
  func aFieldFromALaterDocsyncIsToldApartFromGarbage(scheme: ObjectIDScheme) throws {
    let record = VersionRecord(
      path: path("doc"), content: .file(hash: ContentHash(of: [1]), size: 1, executable: false),
      parents: [], modified: HLCTimestamp(wallMilliseconds: 1), deviceID: DeviceID(high: 0, low: 1),
      deviceName: "d", chunks: ContentRoot(id: .sha256([2]), height: 1, size: 1, scheme: scheme))
    // After the chunks (field 1 or 2, by id scheme), and alone: a newer field, whatever its
    // bytes.
    for bytes in [record.encoded + [3, 9, 9], record.encoded + [200]] {
      let id = VersionID(.sha256(bytes))
      #expect(throws: IntegrityError.newerFormat(id, field: bytes[record.encoded.count])) {
        try VersionRecord(decoding: bytes, expectedID: id)
      }
    }
    // A field 0, or the chunks twice, is no format at all.
    for bytes in [
      record.encoded + [0], record.encoded + Array(record.encoded.suffix(42)),
      record.encoded + [1] + Array(record.encoded.suffix(41)),
    ] {
      let id = VersionID(.sha256(bytes))
      #expect(throws: IntegrityError.malformedRecord(id)) {
        try VersionRecord(decoding: bytes, expectedID: id)
      }
    }
    #expect(
      try VersionRecord(decoding: record.encoded, expectedID: record.id).chunks?.scheme == scheme)
  }

  @Test func aRecordOfABlake2bTreeKeepsItsBytesAndItsId() throws {
    // Field 1 as sessions 40 to 44 wrote it; a docsync of those sessions reads field 2 (BLAKE3
    // trees) as a newer field and asks to be upgraded.
    let record = VersionRecord(
      path: path("doc"), content: .file(hash: ContentHash(of: [1]), size: 1, executable: false),
      parents: [], modified: HLCTimestamp(wallMilliseconds: 1), deviceID: DeviceID(high: 0, low: 1),
      deviceName: "d", chunks: ContentRoot(id: .sha256([2]), height: 1, size: 1, scheme: .blake2b))
    #expect(record.encoded[record.encoded.count - 42] == 1)
    let decoded = try VersionRecord(decoding: record.encoded, expectedID: record.id)
    #expect(decoded.encoded == record.encoded && decoded.id == record.id)
    let current = VersionRecord(
      path: path("doc"), content: .file(hash: ContentHash(of: [1]), size: 1, executable: false),
      parents: [], modified: HLCTimestamp(wallMilliseconds: 1), deviceID: DeviceID(high: 0, low: 1),
      deviceName: "d", chunks: ContentRoot(id: .sha256([2]), height: 1, size: 1, scheme: .blake3))
    #expect(current.encoded[current.encoded.count - 42] == 2 && current.id != record.id)
  }

  @Test func blobCheck() throws {
    let blob = Array("content".utf8)
    let hash = ContentHash(of: blob)
    try Integrity.verify(blob: blob, hash: hash)
    #expect(throws: IntegrityError.blobHashMismatch(expected: hash)) {
      try Integrity.verify(blob: Array("contenT".utf8), hash: hash)
    }
    #expect(
      ContentHash(of: [UInt8]()).hex
        == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
  }

  @Test func pathsCompareByBytesSoNFCAndNFDStayDistinct() {
    let nfc = DocumentPath("caf\u{E9}.txt")
    let nfd = DocumentPath("cafe\u{301}.txt")
    #expect("caf\u{E9}.txt" == "cafe\u{301}.txt")  // what String would wrongly merge
    #expect(nfc != nfd)
    #expect(Set([nfc, nfd]).count == 2)
    #expect(DocumentPath("a/b").parent == DocumentPath("a"))
    #expect(DocumentPath("a/b/c").isEqualOrDescendant(of: DocumentPath("a")))
    #expect(!DocumentPath("ab").isEqualOrDescendant(of: DocumentPath("a")))
    #expect(DocumentPath("a") < DocumentPath("a/b"))
    #expect(DocumentPath("a/b").description == "a/b")
  }
}

@Suite struct ClockTests {
  @Test func tickIsMonotonicEvenWhenWallClockGoesBack() {
    var clock = HybridLogicalClock()
    let t1 = clock.tick(now: 5_000)
    let t2 = clock.tick(now: 4_000)
    let t3 = clock.tick(now: 5_000)
    #expect(t1 < t2 && t2 < t3)
    #expect(t2.wallMilliseconds == 5_000 && t2.counter == 1)
    #expect(clock.tick(now: 9_000) == HLCTimestamp(wallMilliseconds: 9_000))
  }

  @Test func receiveIsLaterThanRemote() {
    var clock = HybridLogicalClock()
    _ = clock.tick(now: 100)
    let remote = HLCTimestamp(wallMilliseconds: 10_000, counter: 4)
    let t = clock.receive(remote: remote, now: 200)
    #expect(t > remote)
    #expect(t == HLCTimestamp(wallMilliseconds: 10_000, counter: 5))
  }

  @Test func deviceHoursBehindStillMakesVersionsLaterThanParents() {
    var set = VersionSet()
    var ahead = device(1, "ahead")
    var behind = device(2, "behind")
    let hour: UInt64 = 3_600_000
    let original = make(&ahead, &set, "doc.md", fileContent("v1"), now: 10 * hour)
    // `behind` has never heard from `ahead`: its clock learns only from the parent.
    let edit = make(&behind, &set, "doc.md", fileContent("v2"), parents: [original], now: 7 * hour)
    #expect(edit.modified > original.modified)
    #expect(set.heads(at: path("doc.md")).map(\.id) == [edit.id])
    let library = LibraryState(set)
    #expect(library.current(at: path("doc.md")) == edit)
    #expect(library.conflicts.isEmpty)
  }

  @Test func aFullCounterMovesToTheNextMillisecondInsteadOfTrapping() {
    var clock = HybridLogicalClock()
    let full = HLCTimestamp(wallMilliseconds: 5_000, counter: .max)
    clock.observe(full)
    let next = clock.tick(now: 1_000)
    #expect(next == HLCTimestamp(wallMilliseconds: 5_001))
    #expect(next > full)
    #expect(clock.tick(now: 1_000) == HLCTimestamp(wallMilliseconds: 5_001, counter: 1))
  }

  @Test func theClockStopsAtTheLastRepresentableTimeWithoutTrapping() {
    let limit = HLCTimestamp.maximumWallMilliseconds
    var clock = HybridLogicalClock()
    #expect(clock.tick(now: .max) == HLCTimestamp(wallMilliseconds: limit))
    clock.observe(HLCTimestamp(wallMilliseconds: limit, counter: .max))
    #expect(clock.tick(now: .max) == HLCTimestamp(wallMilliseconds: limit, counter: .max))
    // A time no record may carry is not remembered.
    var fresh = HybridLogicalClock()
    fresh.observe(HLCTimestamp(wallMilliseconds: limit + 1))
    #expect(fresh.latest == .zero)
    #expect(HLCTimestamp(wallMilliseconds: .max).nanosecondsSinceEpoch == Int64(limit) * 1_000_000)
    #expect(HLCTimestamp(wallMilliseconds: 1_500).nanosecondsSinceEpoch == 1_500_000_000)
    #expect(HLCTimestamp(wallMilliseconds: .max, counter: .max).isoString.hasSuffix("Z"))
  }

  @Test func causalityNotTheWallClockPicksTheLaterEdit() {
    // A device two hours behind edits after seeing a device two hours ahead: its edit is the
    // later one, by its parent, although its wall clock reads four hours earlier.
    var set = VersionSet()
    var ahead = device(1, "ahead")
    var behind = device(2, "behind")
    let hour: UInt64 = 3_600_000
    let now: UInt64 = 1_795_183_392_000
    let first = make(&ahead, &set, "doc.md", fileContent("ahead's"), now: now + 2 * hour)
    behind.observe(first)
    let second = make(
      &behind, &set, "doc.md", fileContent("behind's"), parents: [first], now: now - 2 * hour)
    #expect(second.modified > first.modified)
    #expect(LibraryState(set).current(at: path("doc.md")) == second)
    #expect(RecordCheck.problem(with: second, now: now + 2 * hour) { set[$0]?.modified } == nil)
    #expect(RecordCheck.problem(with: first, now: now - 2 * hour) { set[$0]?.modified } == nil)
  }

  @Test func versionsTimeFormat() {
    // 2026-11-20T14:03:12Z
    let t = HLCTimestamp(wallMilliseconds: 1_795_183_392_000 + 999)
    #expect(t.versionsTimeString == "2026-11-20T14.03.12Z")
    #expect(HLCTimestamp.zero.versionsTimeString == "1970-01-01T00.00.00Z")
    #expect(
      HLCTimestamp(wallMilliseconds: 951_782_400_000).versionsTimeString == "2000-02-29T00.00.00Z")
  }
}
