import DocumentModel
import Testing

/// Automatic merging as `.docsyncattributes` asks: decided from the versions alone, so every
/// device that sees the same heads makes the same merge record.
@Suite struct AutoMergeTests {
  static let base = "title\none\ntwo\nthree\nfour\nend\n"

  /// The library's content by hash, as a device's blob store holds it.
  var contents: [ContentHash: [UInt8]] = [:]

  mutating func content(_ text: String) -> VersionContent {
    let bytes = Array(text.utf8)
    contents[ContentHash(of: bytes)] = bytes
    return fileContent(text)
  }

  /// `plan.md` at `base`, then one concurrent edit per text on its own device.
  mutating func conflict(_ edits: [String], base: String = Self.base) -> (
    VersionSet, [VersionRecord]
  ) {
    var set = VersionSet()
    var origin = device(9, "origin")
    let root = make(&origin, &set, "plan.md", content(base), now: 1_000)
    var heads: [VersionRecord] = []
    for (index, text) in edits.enumerated() {
      var author = device(UInt64(index + 1), "device\(index + 1)")
      heads.append(
        make(
          &author, &set, "plan.md", content(text), parents: [root],
          now: 2_000 + UInt64(index) * 10))
    }
    return (set, heads)
  }

  func plan(_ set: VersionSet, _ policy: MergePolicy) -> AutoMerge? {
    AutoMerge.plan(
      at: DocumentPath("plan.md"), in: set, state: LibraryState(set), policy: policy)
  }

  @Test mutating func threeNonOverlappingEditsMergeIntoOneRecordThatEveryDeviceMakes() throws {
    let (set, heads) = conflict([
      "title\nONE\ntwo\nthree\nfour\nend\n", "title\none\ntwo\nTHREE\nfour\nend\n",
      "title\none\ntwo\nthree\nfour\nend\nappendix\n",
    ])
    let merge = try #require(plan(set, .text))
    #expect(merge.headIDs == heads.map(\.id).sorted())
    guard case .merged(let bytes) = merge.merge(contents: contents) else {
      Issue.record("no merge: \(merge.merge(contents: contents))")
      return
    }
    #expect(
      String(decoding: bytes, as: UTF8.self) == "title\nONE\ntwo\nTHREE\nfour\nend\nappendix\n")
    let record = merge.record(hash: ContentHash(of: bytes), size: UInt64(bytes.count))
    #expect(record.parents == heads.map(\.id).sorted())
    #expect(record.deviceID == AutoMerge.deviceID && record.deviceName == "merge")
    let latest = heads.map(\.modified).max()!
    #expect(
      record.modified
        == HLCTimestamp(wallMilliseconds: latest.wallMilliseconds, counter: latest.counter + 1))
    #expect(record.contentTime == heads.compactMap(\.contentTime).max())
    #expect(RecordCheck.problem(with: record, now: 3_000, knownTime: { set[$0]?.modified }) == nil)

    // Another device learns the same records in another order, on another clock: same record.
    let elsewhere = VersionSet(set.records.values.sorted { $0.id > $1.id })
    let again = try #require(plan(elsewhere, .text))
    #expect(again == merge)
    #expect(
      again.record(hash: ContentHash(of: bytes), size: UInt64(bytes.count)).id == record.id)

    var merged = set
    merged.insert(record)
    let state = LibraryState(merged)
    #expect(state.conflicts.isEmpty)
    #expect(state.current(at: DocumentPath("plan.md")) == record)
    #expect(plan(merged, .text) == nil)
  }

  @Test mutating func anOverlapStaysAConflictUnlessUnionKeepsBothSides() throws {
    let (set, _) = conflict([
      "title\nlaptop\ntwo\nthree\nfour\nend\n", "title\ndesktop\ntwo\nthree\nfour\nend\n",
    ])
    let text = try #require(plan(set, .text))
    #expect(text.merge(contents: contents) == .overlapping(1))
    let union = try #require(plan(set, .union))
    guard case .merged(let bytes) = union.merge(contents: contents) else {
      Issue.record("union did not merge")
      return
    }
    let result = String(decoding: bytes, as: UTF8.self)
    #expect(result.contains("laptop\n") && result.contains("desktop\n"), "\(result)")
    #expect(!result.contains("<<<<<<<"))
  }

  @Test mutating func nothingIsMergedThatIsNotAskedForNotTextOrNotHere() throws {
    let (set, _) = conflict(["title\nONE\n", "title\none\nTWO\n"], base: "title\none\n")
    #expect(plan(set, .manual) == nil)
    let merge = try #require(plan(set, .text))
    #expect(merge.merge(contents: [:]) == .missingContent)

    let (binary, _) = conflict(["a\u{0}b", "a\u{0}c"], base: "a\u{0}")
    #expect(try #require(plan(binary, .union)).merge(contents: contents) == .notText)

    // A deletion against an edit is not a conflict between texts: the edit wins as always.
    var set2 = VersionSet()
    var a = device(1)
    var b = device(2)
    let root = make(&a, &set2, "plan.md", content("x\n"), now: 1_000)
    make(&a, &set2, "plan.md", .deletion, parents: [root], now: 2_000)
    make(&b, &set2, "plan.md", content("y\n"), parents: [root], now: 2_000)
    #expect(plan(set2, .text) == nil)
  }

  @Test mutating func headsThatShareARecentAncestorAreMergedOverIt() throws {
    var set = VersionSet()
    var a = device(1, "a")
    var b = device(2, "b")
    var c = device(3, "c")
    let root = make(&a, &set, "plan.md", content("1\n2\n3\n4\n5\n6\n"), now: 1_000)
    // b and c both saw b's first edit of line 2; c then changed line 2 again.
    let shared = make(
      &b, &set, "plan.md", content("1\nB\n3\n4\n5\n6\n"), parents: [root], now: 2_000)
    make(&a, &set, "plan.md", content("1\n2\n3\n4\n5\nA\n"), parents: [root], now: 3_000)
    make(&b, &set, "plan.md", content("1\nB\n3\nb\n5\n6\n"), parents: [shared], now: 3_000)
    make(&c, &set, "plan.md", content("1\nC\n3\n4\n5\n6\n"), parents: [shared], now: 3_000)
    let merge = try #require(plan(set, .text))
    #expect(merge.heads.count == 3)
    // Over the old root, line 2 would be B on one side and C on the other: an overlap.
    #expect(merge.merge(contents: contents) == .merged(Array("1\nC\n3\nb\n5\nA\n".utf8)))
  }
}
