import DocumentModel
import Testing

@testable import SyncEngine

/// When the engine merges a conflict by itself: once its heads have stayed the same for the
/// settle time, and not again for heads that gave no merge.
@Suite struct MergeWatchTests {
  /// `plan.md` in conflict between `edits` made on separate devices over one base.
  func plan(_ edits: [String]) throws -> AutoMerge {
    func file(_ text: String) -> VersionContent {
      let bytes = Array(text.utf8)
      return .file(hash: ContentHash(of: bytes), size: UInt64(bytes.count), executable: false)
    }
    let path = DocumentPath("plan.md")
    let base = VersionRecord(
      path: path, content: file("base\n"), parents: [],
      modified: HLCTimestamp(wallMilliseconds: 1_000), deviceID: DeviceID(high: 0, low: 9),
      deviceName: "origin")
    var set = VersionSet([base])
    for (index, text) in edits.enumerated() {
      set.insert(
        VersionRecord(
          path: path, content: file(text), parents: [base.id],
          modified: HLCTimestamp(wallMilliseconds: 2_000),
          deviceID: DeviceID(high: 0, low: UInt64(index)),
          deviceName: "device\(index)"))
    }
    return try #require(
      AutoMerge.plan(at: path, in: set, state: LibraryState(set), policy: .text))
  }

  @Test func aMergeIsDueOnceItsHeadsHaveSettled() throws {
    var watch = MergeWatch()
    let two = try plan(["a\n", "b\n"])
    let three = try plan(["a\n", "b\n", "c\n"])
    let paths: Set = [two.path]
    var (due, wake) = watch.due([two], candidates: paths, now: 0, settle: 1_000)
    #expect(due.isEmpty && wake == 1_000)
    (due, wake) = watch.due([two], candidates: paths, now: 400, settle: 1_000)
    #expect(due.isEmpty && wake == 600)
    // A third head arrives: the wait starts again, so the merge is made of all three.
    (due, wake) = watch.due([three], candidates: paths, now: 900, settle: 1_000)
    #expect(due.isEmpty && wake == 1_000)
    (due, wake) = watch.due([three], candidates: paths, now: 1_500, settle: 1_000)
    #expect(due.isEmpty && wake == 400)
    (due, wake) = watch.due([three], candidates: paths, now: 1_900, settle: 1_000)
    #expect(due == [three] && wake == nil)
  }

  @Test func headsThatGaveNoMergeAreNotTriedAgainUntilTheyChange() throws {
    var watch = MergeWatch()
    let overlap = try plan(["a\n", "b\n"])
    let paths: Set = [overlap.path]
    _ = watch.due([overlap], candidates: paths, now: 0, settle: 10)
    #expect(watch.due([overlap], candidates: paths, now: 20, settle: 10).due == [overlap])
    watch.judged(overlap)
    #expect(watch.isJudged(overlap.path, heads: overlap.headIDs))
    #expect(watch.due([overlap], candidates: paths, now: 40, settle: 10).due.isEmpty)
    // Kept while the path is a candidate (the engine then does not plan it at all)...
    _ = watch.due([], candidates: paths, now: 50, settle: 10)
    #expect(watch.isJudged(overlap.path, heads: overlap.headIDs))
    // ...and forgotten when it is not (resolved, say)...
    _ = watch.due([], candidates: [], now: 60, settle: 10)
    #expect(!watch.isJudged(overlap.path, heads: overlap.headIDs))
    // ...or when the attributes change: `merge=union` may merge what `merge=text` did not.
    watch.judged(overlap)
    watch.adopt(MergeAttributes(fileContent: Array("*.md merge=union\n".utf8)), from: nil)
    #expect(!watch.isJudged(overlap.path, heads: overlap.headIDs))
  }
}
