import DocumentModel
import Testing

/// Records from other devices: every field checked before use (issue 14).
@Suite struct RecordCheckTests {
  static let hour: UInt64 = 3_600_000
  /// 2026-11-20T14:03:12Z, this device's wall clock in these tests.
  static let now: UInt64 = 1_795_183_392_000
  static let year2300: UInt64 = 10_413_792_000_000
  static let year2100: UInt64 = 4_102_444_800_000

  static func record(
    _ components: [[UInt8]] = [Array("notes".utf8), Array("plan.md".utf8)],
    content: VersionContent = fileContent("x"), parents: [VersionID] = [],
    modified: HLCTimestamp = HLCTimestamp(wallMilliseconds: now), deviceName: String = "laptop",
    origin: RenameOrigin? = nil, contentTime: Int64? = nil
  ) -> VersionRecord {
    VersionRecord(
      path: DocumentPath(components: components), content: content, parents: parents,
      modified: modified, deviceID: DeviceID(high: 1, low: 2), deviceName: deviceName,
      origin: origin, contentTime: contentTime)
  }

  /// What a receiving device decides about `record` after it travelled as bytes: the id always
  /// matches (each bad record here is well formed), so only the field check can refuse it.
  static func verdict(
    _ record: VersionRecord, now: UInt64 = now, known: [VersionRecord] = []
  ) throws -> RecordProblem? {
    let decoded = try VersionRecord(decoding: record.encoded, expectedID: record.id)
    let times = Dictionary(uniqueKeysWithValues: known.map { ($0.id, $0.modified) })
    return RecordCheck.problem(with: decoded, now: now) { times[$0] }
  }

  @Test func anOrdinaryRecordPasses() throws {
    #expect(try Self.verdict(Self.record()) == nil)
    let target = Array("../elsewhere".utf8)
    let link = Self.record(
      content: .symlink(hash: ContentHash(of: target), size: UInt64(target.count)),
      contentTime: -5)
    #expect(try Self.verdict(link) == nil)
    #expect(try Self.verdict(Self.record(content: .directory)) == nil)
    #expect(try Self.verdict(Self.record([Array(".versionsx".utf8)])) == nil)
    #expect(try Self.verdict(Self.record([Array("a".utf8), Array(".versions".utf8)])) == nil)
    #expect(try Self.verdict(Self.record([Array(repeating: 0x61, count: 255)])) == nil)
  }

  @Test(arguments: [
    (Array(".".utf8), "dot"), (Array("..".utf8), "dot-dot"), (Array("a\0b".utf8), "NUL"),
  ])
  func badComponentsAreRefused(component: [UInt8], label: String) throws {
    for components in [[component], [Array("folder".utf8), component, Array("doc".utf8)]] {
      #expect(
        try Self.verdict(Self.record(components)) == .badComponent(component), "\(label)")
    }
  }

  @Test(arguments: ["a/b", ""])
  func aComponentWithASlashOrNothingIsNotEvenDecoded(component: String) {
    let record = Self.record([Array("folder".utf8), Array(component.utf8)])
    #expect(
      RecordCheck.structuralProblem(with: record) == .badComponent(Array(component.utf8)))
    #expect(throws: IntegrityError.malformedRecord(record.id)) {
      try VersionRecord(decoding: record.encoded, expectedID: record.id)
    }
  }

  @Test func overlongNamesAndPathsAreRefused() throws {
    let long = Array(repeating: UInt8(0x61), count: 256)
    #expect(try Self.verdict(Self.record([long])) == .componentTooLong(256))
    let deep = Array(repeating: Array(repeating: UInt8(0x62), count: 200), count: 21)
    #expect(try Self.verdict(Self.record(deep)) == .pathTooLong(21 * 200 + 20))
    #expect(RecordCheck.problem(with: DocumentPath.root) == .rootPath)
  }

  @Test func theReservedFolderAndBadOriginsAreRefused() throws {
    let reserved = Self.record([Array(".versions".utf8), Array("doc".utf8)])
    #expect(try Self.verdict(reserved) == .reservedPath)
    let origin = RenameOrigin(path: path("../../etc/passwd"), version: VersionID(.sha256([1])))
    let renamed = Self.record(origin: origin)
    #expect(try Self.verdict(renamed) == .originPath(.badComponent(Array("..".utf8))))
  }

  @Test func absurdSizesAreRefused() throws {
    let hash = ContentHash(of: [1])
    let largest = Self.record(content: .file(hash: hash, size: 1 << 50, executable: false))
    #expect(try Self.verdict(largest) == nil)
    for size: UInt64 in [(1 << 50) + 1, UInt64(Int64.max), .max] {
      let huge = Self.record(content: .file(hash: hash, size: size, executable: false))
      #expect(try Self.verdict(huge) == .sizeTooLarge(size))
    }
    let link = Self.record(content: .symlink(hash: hash, size: 4096))
    #expect(try Self.verdict(link) == .sizeTooLarge(4096))
  }

  @Test func fieldsNoDeviceMakesAreRefused() throws {
    let folder = Self.record(content: .directory, contentTime: 1)
    #expect(try Self.verdict(folder) == .contentTimeWithoutContent)
    let deletion = Self.record(content: .deletion, contentTime: 1)
    #expect(try Self.verdict(deletion) == .contentTimeWithoutContent)
    for name in [
      "two\nlines", "nul\0", "bell\u{7}", "del\u{7F}", String(repeating: "n", count: 256),
    ] {
      #expect(try Self.verdict(Self.record(deviceName: name)) == .badDeviceName)
    }
    #expect(try Self.verdict(Self.record(deviceName: "Ünïcödé laptop 💻")) == nil)
    // Parents out of order hash and decode (the encoding keeps their order): refused here.
    let p1 = VersionID(.sha256([1]))
    let p2 = VersionID(.sha256([2]))
    let sorted = Self.record(parents: [p1, p2])
    let unsorted = VersionRecord(
      storedID: sorted.id, path: sorted.path, content: sorted.content,
      parents: sorted.parents.reversed(), modified: sorted.modified, deviceID: sorted.deviceID,
      deviceName: sorted.deviceName, origin: nil)
    let id = VersionID(.sha256(unsorted.encoded))
    let decoded = try VersionRecord(decoding: unsorted.encoded, expectedID: id)
    #expect(RecordCheck.problem(with: decoded, now: Self.now) { _ in nil } == .parentsNotCanonical)
  }

  @Test func timesOutOfRangeAreRefused() throws {
    let limit = HLCTimestamp.maximumWallMilliseconds
    for wall in [limit + 1, UInt64.max] {
      let record = Self.record(modified: HLCTimestamp(wallMilliseconds: wall, counter: .max))
      #expect(try Self.verdict(record, now: .max) == .timeOutOfRange(record.modified))
    }
    // 2300 is past what a file time holds (2262): never a valid time.
    let year2300 = Self.record(modified: HLCTimestamp(wallMilliseconds: Self.year2300))
    #expect(try Self.verdict(year2300) == .timeOutOfRange(year2300.modified))
    #expect(try Self.verdict(year2300, now: Self.year2300) == .timeOutOfRange(year2300.modified))
    let year2100 = Self.record(modified: HLCTimestamp(wallMilliseconds: Self.year2100))
    let lead = Self.year2100 - Self.now
    #expect(try Self.verdict(year2100) == .timeTooFarAhead(year2100.modified, lead: lead))
    let text = "\(RecordProblem.timeTooFarAhead(year2100.modified, lead: lead))"
    #expect(text.contains("2100-01-01T00:00:00Z") && text.contains("26704 days"), "\(text)")
  }

  @Test func clocksHoursOffAreAcceptedADayAheadIsNot() throws {
    for offset in [2 * Self.hour, 14 * Self.hour, 24 * Self.hour] {
      let ahead = Self.record(modified: HLCTimestamp(wallMilliseconds: Self.now + offset))
      #expect(try Self.verdict(ahead) == nil, "\(offset / Self.hour) h ahead")
    }
    let behind = Self.record(modified: HLCTimestamp(wallMilliseconds: Self.now - 2 * Self.hour))
    #expect(try Self.verdict(behind) == nil)
    #expect(try Self.verdict(Self.record(modified: .zero)) == nil)
    let tooFar = Self.record(modified: HLCTimestamp(wallMilliseconds: Self.now + 25 * Self.hour))
    #expect(try Self.verdict(tooFar) == .timeTooFarAhead(tooFar.modified, lead: 25 * Self.hour))
    // This device's clock 2 h behind: a record made 2 h ahead of it passes as well.
    let fromNormal = Self.record(modified: HLCTimestamp(wallMilliseconds: Self.now))
    #expect(try Self.verdict(fromNormal, now: Self.now - 2 * Self.hour) == nil)
  }

  @Test func theBoundFollowsKnownParentsAndAChildIsLaterThanThem() throws {
    // A parent this device accepted earlier, then its clock was set back two days.
    let parent = Self.record(modified: HLCTimestamp(wallMilliseconds: Self.now + 20 * Self.hour))
    let earlier = Self.now - 48 * Self.hour
    let child = Self.record(
      content: fileContent("y"), parents: [parent.id],
      modified: HLCTimestamp(wallMilliseconds: parent.modified.wallMilliseconds, counter: 1))
    #expect(try Self.verdict(child, now: earlier, known: [parent]) == nil)
    #expect(
      try Self.verdict(child, now: earlier)
        == .timeTooFarAhead(child.modified, lead: 68 * Self.hour))
    let stale = Self.record(
      content: fileContent("z"), parents: [parent.id],
      modified: HLCTimestamp(wallMilliseconds: Self.now))
    #expect(try Self.verdict(stale, known: [parent]) == .notLaterThanParent(parent.id))
    let origin = RenameOrigin(path: path("old.md"), version: parent.id)
    let renamed = Self.record(origin: origin)
    #expect(try Self.verdict(renamed, known: [parent]) == .notLaterThanParent(parent.id))
  }

  @Test func printableEscapesWhatALogLineMustNotHold() {
    #expect(RecordCheck.printable(Array("a/b c.md".utf8)) == #""a/b c.md""#)
    #expect(RecordCheck.printable([0x61, 0x0A, 0x00, 0x22, 0xFF]) == #""a\x0a\x00\"\xff""#)
    #expect(RecordCheck.printable(Array(repeating: 0x61, count: 10), limit: 3) == "\"aaa\"…")
  }
}
