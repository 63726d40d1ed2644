import DocumentModel
import Testing

@testable import SyncEngine

/// Merging: the loop wakes when the earliest waiting merge is due, and a merged view is chosen
/// only by its exact bytes over the heads it was made from.
@Suite struct MergeStateTests {
  @Test func theWakeTimeIsWhenTheEarliestWaitingMergeIsDue() throws {
    var merges = MergeState()
    let first = try #require(OwnerFixtures.mergePlan(at: "a.md", ["a\n", "b\n"]))
    let second = try #require(OwnerFixtures.mergePlan(at: "b.md", ["c\n", "d\n"]))
    let candidates: Set = [first.path, second.path]
    #expect(merges.wakeIn == nil)
    #expect(merges.due([first], candidates: candidates, now: 0, settle: 1_000).isEmpty)
    #expect(merges.wakeIn == 1_000)
    // The second appears later: the first is still the earliest due.
    #expect(merges.due([first, second], candidates: candidates, now: 300, settle: 1_000).isEmpty)
    #expect(merges.wakeIn == 700)
    // The first is due; the second waits for what is left of its settle time.
    let due = merges.due([first, second], candidates: candidates, now: 1_000, settle: 1_000)
    #expect(due == [first])
    #expect(merges.wakeIn == 300)
    // Nothing waits any more once both are due.
    _ = merges.due([first, second], candidates: candidates, now: 1_300, settle: 1_000)
    #expect(merges.wakeIn == nil)
  }

  @Test func aMergedViewIsChosenOnlyByItsBytesOverItsHeads() {
    var merges = MergeState()
    let path = DocumentPath("plan.md")
    let heads = [
      OwnerFixtures.record("plan.md", "a\n").id, OwnerFixtures.record("plan.md", "b\n").id,
    ]
    let merged = ContentHash(of: Array("a\nb\n".utf8))
    merges.noteMergedView(at: path, heads: heads, hash: merged)
    #expect(merges.choosesMergedView(at: path, hash: merged, heads: heads.reversed()))
    #expect(!merges.choosesMergedView(at: path, hash: ContentHash(of: [1]), heads: heads))
    // A head arrived since the view was made: the view does not merge it.
    let third = OwnerFixtures.record("plan.md", "c\n").id
    #expect(!merges.choosesMergedView(at: path, hash: merged, heads: heads + [third]))
    #expect(!merges.choosesMergedView(at: DocumentPath("other.md"), hash: merged, heads: heads))
    merges.forgetMergedView(at: path)
    #expect(!merges.choosesMergedView(at: path, hash: merged, heads: heads))
  }
}
