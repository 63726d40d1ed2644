import DocumentModel
import Testing

/// The three-way merge that `.versions/<path>/merged<ext>` shows, its line diff, and the
/// common ancestor it merges over.
@Suite struct MergeTests {
  func text(_ lines: [String]) -> [UInt8] { Array(lines.map { $0 + "\n" }.joined().utf8) }
  let labels = ThreeWayMerge.Overlap.markers(
    current: "current (desktop, 2026-11-21T06:05:25Z)", base: "base",
    other: "2026-11-21T06.05.24Z_laptop_09b885.md (laptop, 2026-11-21T06:05:24Z)")

  @Test func editsToDifferentLinesMergeWithoutMarkers() {
    let base = text(["title", "one", "two", "three", "four", "end"])
    let current = text(["title", "ONE", "two", "three", "four", "end"])
    let other = text(["title", "one", "two", "three", "FOUR", "end", "appendix"])
    let merged = ThreeWayMerge.merge(base: base, current: current, other: other, overlap: labels)
    #expect(merged.overlaps == 0)
    #expect(merged.bytes == text(["title", "ONE", "two", "three", "FOUR", "end", "appendix"]))
  }

  @Test func theSameChangeOnBothSidesIsTakenOnce() {
    let base = text(["a", "b", "c"])
    let both = text(["a", "B", "c"])
    let merged = ThreeWayMerge.merge(base: base, current: both, other: both, overlap: labels)
    #expect(merged == ThreeWayMerge.Result(bytes: both, overlaps: 0))
  }

  @Test func overlappingChangesAreShownBetweenMarkersThatNameEachSide() {
    let base = text(["a", "b", "c"])
    let current = text(["a", "desktop's b", "c"])
    let other = text(["a", "laptop's b", "c"])
    let merged = ThreeWayMerge.merge(base: base, current: current, other: other, overlap: labels)
    #expect(merged.overlaps == 1)
    #expect(
      String(decoding: merged.bytes, as: UTF8.self) == """
        a
        <<<<<<< current (desktop, 2026-11-21T06:05:25Z)
        desktop's b
        ||||||| base
        b
        =======
        laptop's b
        >>>>>>> 2026-11-21T06.05.24Z_laptop_09b885.md (laptop, 2026-11-21T06:05:24Z)
        c

        """)
    let union = ThreeWayMerge.merge(base: base, current: current, other: other, overlap: .union)
    #expect(
      union
        == ThreeWayMerge.Result(bytes: text(["a", "desktop's b", "laptop's b", "c"]), overlaps: 1))
  }

  @Test func insertionsAtOnePlaceAndAnEditAgainstADeletionOverlap() {
    let base = text(["a", "b"])
    let inserted = ThreeWayMerge.merge(
      base: base, current: text(["a", "x", "b"]), other: text(["a", "y", "b"]), overlap: .union)
    #expect(inserted == ThreeWayMerge.Result(bytes: text(["a", "x", "y", "b"]), overlaps: 1))
    let deleted = ThreeWayMerge.merge(
      base: base, current: text(["a"]), other: text(["a", "B"]), overlap: labels)
    #expect(deleted.overlaps == 1)
  }

  @Test func aLastLineWithoutNewlineNeverJoinsAMarker() {
    let merged = ThreeWayMerge.merge(
      base: Array("a\nb".utf8), current: Array("a\nc".utf8), other: Array("a\nd".utf8),
      overlap: .markers(current: "A", base: "O", other: "B"))
    #expect(
      String(decoding: merged.bytes, as: UTF8.self)
        == "a\n<<<<<<< A\nc\n||||||| O\nb\n=======\nd\n>>>>>>> B\n")
  }

  @Test func onlyTextIsMerged() {
    #expect(ThreeWayMerge.isMergeableText(Array("plain\ntext ✓\n".utf8)))
    #expect(!ThreeWayMerge.isMergeableText([0x61, 0x00, 0x62]))
    #expect(!ThreeWayMerge.isMergeableText([0xff, 0xfe, 0x41]))
    #expect(
      !ThreeWayMerge.isMergeableText(
        [UInt8](repeating: 0x61, count: ThreeWayMerge.maximumBytes + 1)))
  }

  /// Random small texts: the diff is a longest common subsequence, and the merge keeps each
  /// side's change when the other side changed nothing.
  @Test(arguments: 0..<200)
  func randomTexts(_ seed: Int) {
    var generator = SplitMix64(state: UInt64(seed))
    func random() -> [UInt8] {
      let count = generator.below(13)
      return Array(
        (0..<count).map { _ in generator.pick(["a", "b", "c", "d"]) + "\n" }.joined().utf8)
    }
    let (base, current, other) = (random(), random(), random())
    let (o, a) = (LineDiff.lines(base), LineDiff.lines(current))
    let matches = LineDiff.matches(o, a)
    let pairs = matches.enumerated().compactMap { index, match in match.map { (index, $0) } }
    for (i, j) in pairs { #expect(o[i] == a[j]) }
    #expect(zip(pairs, pairs.dropFirst()).allSatisfy { $0.0 < $1.0 && $0.1 < $1.1 })
    #expect(pairs.count == longestCommonSubsequence(o, a))
    #expect(
      ThreeWayMerge.merge(base: base, current: current, other: base, overlap: .union)
        == ThreeWayMerge.Result(bytes: current, overlaps: 0))
    #expect(
      ThreeWayMerge.merge(base: base, current: base, other: other, overlap: .union)
        == ThreeWayMerge.Result(bytes: other, overlaps: 0))
    #expect(
      ThreeWayMerge.merge(base: base, current: current, other: current, overlap: .union)
        == ThreeWayMerge.Result(bytes: current, overlaps: 0))
  }

  func longestCommonSubsequence<T: Equatable>(_ a: [T], _ b: [T]) -> Int {
    var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in a.indices.reversed() {
      for j in b.indices.reversed() {
        table[i][j] = a[i] == b[j] ? table[i + 1][j + 1] + 1 : max(table[i + 1][j], table[i][j + 1])
      }
    }
    return table[0][0]
  }

  @Test func theNearestCommonAncestorOfAConflictsHeads() {
    var set = VersionSet()
    var laptop = device(1, "laptop")
    var desktop = device(2, "desktop")
    let root = make(&laptop, &set, "plan.md", fileContent("v0"), now: 1_000)
    let shared = make(&laptop, &set, "plan.md", fileContent("v1"), parents: [root], now: 2_000)
    let mine = make(&laptop, &set, "plan.md", fileContent("laptop"), parents: [shared], now: 3_000)
    let theirs = make(
      &desktop, &set, "plan.md", fileContent("desktop"), parents: [shared], now: 3_500)
    let later = make(
      &desktop, &set, "plan.md", fileContent("desktop 2"), parents: [theirs], now: 4_000)
    #expect(set.nearestCommonAncestor(of: [mine.id, later.id])?.id == shared.id)
    #expect(set.nearestCommonAncestor(of: [mine.id, shared.id])?.id == shared.id)
    let stranger = make(&desktop, &set, "plan.md", fileContent("unrelated"), now: 5_000)
    #expect(set.nearestCommonAncestor(of: [mine.id, stranger.id]) == nil)
  }
}
