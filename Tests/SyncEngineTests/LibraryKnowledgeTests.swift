import DocumentModel
import Hub
import Testing

@testable import SyncEngine

/// What the library knows stays one story: the records, the state and history they make, and
/// the outbox of versions still to go up, changed only together.
@Suite struct LibraryKnowledgeTests {
  typealias F = OwnerFixtures

  @Test func aRecordMadeHereIsKnownShownInTheStateAndQueuedTogether() {
    var library = F.emptyLibrary()
    let first = F.record("notes/plan.md", "one\n")
    let change = library.queue([first])
    let path = DocumentPath("notes/plan.md")
    #expect(change.touched == [path])
    // The folder above appeared with it.
    #expect(change.recomputed.contains(DocumentPath("notes")))
    #expect(library.known.contains(first.id))
    #expect(library.state.entries[path] == .document(first))
    #expect(library.outbox == [first.id])
    #expect(library.state == LibraryState(library.known))

    let second = F.record("notes/plan.md", "two\n", parents: [first], time: 2_000)
    _ = library.queue([second])
    #expect(library.state.entries[path] == .document(second))
    #expect(library.outbox == [first.id, second.id])
    // The first version is now an earlier one, in `.history`.
    #expect(library.history.earlierVersions(at: path, in: library.known).map(\.id) == [first.id])
    #expect(library.history == HistoryIndex(library.known))
    #expect(library.state == LibraryState(library.known))
  }

  @Test func aRecordFromElsewhereMovesTheClockAndQueuesNothing() {
    var library = F.emptyLibrary()
    let remote = F.record("a.md", "theirs\n", time: 5_000_000, device: 2)
    _ = library.learn([remote])
    #expect(library.outbox.isEmpty)
    #expect(library.state.entries[DocumentPath("a.md")] == .document(remote))
    // What this device records next is later than what it has seen, whatever its wall clock.
    let next = library.author.record(
      [PendingChange(path: DocumentPath("a.md"), content: F.file("mine\n"), parents: [remote.id])],
      known: library.known, now: 1_000)
    #expect(next.count == 1 && next[0].modified > remote.modified)
  }

  @Test func aChangeNamesTheConflictsItsPathsHadBefore() throws {
    var library = F.emptyLibrary()
    let path = DocumentPath("plan.md")
    let base = F.record("plan.md", "base\n")
    let mine = F.record("plan.md", "mine\n", parents: [base], time: 2_000, device: 1)
    let theirs = F.record("plan.md", "theirs\n", parents: [base], time: 2_000, device: 2)
    _ = library.learn([base, mine])
    let arrived = library.learn([theirs])
    #expect(arrived.conflictsBefore.isEmpty)
    #expect(library.state.conflicts[path]?.count == 1)

    // A resolution follows both heads: the conflict ends, and the change says what it was.
    let current = try #require(library.state.current(at: path))
    let resolution = F.record("plan.md", "both\n", parents: [mine, theirs], time: 3_000)
    let resolved = library.queue([resolution])
    #expect(resolved.conflictsBefore[path]?.count == 1)
    #expect(resolved.currentBefore[path] == current)
    #expect(library.state.conflicts[path] == nil)
    #expect(library.state == LibraryState(library.known))
  }

  @Test func theOutboxNamesOnlyKnownVersionsEachOnce() {
    var library = F.emptyLibrary()
    let known = F.record("a.md", "a\n")
    let unknown = F.record("b.md", "b\n")
    _ = library.learn([known])
    library.enqueue([unknown.id, known.id, known.id])
    #expect(library.outbox == [known.id])
    library.enqueue([known.id])
    #expect(library.outbox == [known.id])

    var restarted = F.emptyLibrary()
    _ = restarted.learn([known])
    restarted.loadOutbox([unknown.id, known.id, known.id])
    #expect(restarted.outbox == [known.id])
  }

  @Test func aHeldBackVersionStaysQueuedIsToldOnceAndLeavesWithTheUpload() {
    var library = F.emptyLibrary()
    let a = F.record("a.md", "a\n")
    let b = F.record("b.md", "b\n")
    _ = library.queue([a, b])
    #expect(library.nextUploads(limit: 10).map(\.id) == [a.id, b.id])
    #expect(library.nextUploads(limit: 1).map(\.id) == [a.id])

    // Only a queued version can be held back; the first time is the one announced.
    let strangerHeld = library.holdBack(F.record("c.md", "c\n").id)
    #expect(!strangerHeld)
    #expect(library.stalled.isEmpty)
    let firstTime = library.holdBack(a.id)
    #expect(firstTime)
    let secondTime = library.holdBack(a.id)
    #expect(!secondTime)
    #expect(library.nextUploads(limit: 10).map(\.id) == [b.id])
    #expect(!library.nothingToUpload)
    #expect(library.uploadsWaiting.map(\.id) == [b.id])

    library.uploaded([b.id])
    #expect(library.outbox == [a.id])
    #expect(library.nothingToUpload)

    // A sync asked for tries it again, without announcing it again.
    library.retryHeldBack()
    #expect(library.nextUploads(limit: 10).map(\.id) == [a.id])
    let toldAgain = library.holdBack(a.id)
    #expect(!toldAgain)
    library.uploaded([a.id])
    #expect(library.outbox.isEmpty && library.stalled.isEmpty)
    #expect(library.heldBackAnnounced.isEmpty)
  }

  @Test func forgettingAVersionTakesItOutOfEverythingThatNamedIt() {
    var library = F.emptyLibrary()
    let path = DocumentPath("a.md")
    let first = F.record("a.md", "1\n")
    let second = F.record("a.md", "2\n", parents: [first], time: 2_000)
    _ = library.queue([first, second])
    let held = library.holdBack(second.id)
    #expect(held)
    let change = library.forget([second])
    #expect(change.touched.contains(path))
    #expect(!library.known.contains(second.id))
    #expect(library.outbox == [first.id])
    #expect(library.stalled.isEmpty && library.heldBackAnnounced.isEmpty)
    #expect(library.state.entries[path] == .document(first))
    #expect(library.state == LibraryState(library.known))
    #expect(library.history == HistoryIndex(library.known))
  }
}
