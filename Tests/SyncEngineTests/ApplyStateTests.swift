import DocumentModel
import LocalStore
import Testing

@testable import SyncEngine

/// A remote file version waits, lands, or is dropped with its path's place in `deferred`: a
/// path never stops waiting while its version is still on its way.
@Suite struct ApplyStateTests {
  func item(_ path: String, size: UInt64 = 10) -> FileApply {
    let record = OwnerFixtures.record(path, "\(path) content\n")
    return FileApply(
      path: DocumentPath(path), expected: nil, target: record,
      hash: record.content.blobHash!, size: size, executable: false, modificationTime: 0)
  }

  @Test func aQueuedVersionKeepsItsPathWaitingUntilItLands() {
    var applies = ApplyState()
    let path = DocumentPath("a.md")
    applies.queue(item("a.md"))
    #expect(applies.deferred == [path])
    // Brought up to date by other means meanwhile: still waits for what is queued.
    applies.settle(path)
    #expect(applies.deferred == [path])

    let batch = applies.take(only: nil, maxFiles: 10, maxBytes: 1_000)
    #expect(batch.map(\.path) == [path])
    #expect(applies.pendingApplies.isEmpty && applies.isApplying(path))
    applies.settle(path)
    #expect(applies.deferred == [path])
    // Being applied, it is not taken again.
    #expect(applies.take(only: nil, maxFiles: 10, maxBytes: 1_000).isEmpty)

    applies.finish(path, landed: true)
    #expect(!applies.isApplying(path) && applies.deferred.isEmpty)
  }

  @Test func aVersionThatDidNotLandLeavesItsPathWaiting() {
    var applies = ApplyState()
    let path = DocumentPath("a.md")
    applies.queue(item("a.md"))
    _ = applies.take(only: nil, maxFiles: 10, maxBytes: 1_000)
    applies.finish(path, landed: false)
    #expect(applies.deferred == [path] && applies.applying.isEmpty)
    // The loop looks again: nothing is queued now, so it may stop waiting.
    applies.settle(path)
    #expect(applies.deferred.isEmpty)
  }

  @Test func aBatchHoldsAtMostItsFilesAndBytesButABigFileGoesAlone() {
    var applies = ApplyState()
    for name in ["a", "b", "c", "d"] { applies.queue(item(name, size: 40)) }
    let two = applies.take(only: nil, maxFiles: 2, maxBytes: 1_000)
    #expect(two.count == 2)
    let byBytes = applies.take(only: nil, maxFiles: 10, maxBytes: 50)
    #expect(byBytes.count == 1)
    #expect(applies.pendingApplies.count == 1)

    var big = ApplyState()
    big.queue(item("huge", size: 5_000))
    #expect(big.take(only: nil, maxFiles: 10, maxBytes: 50).map(\.size) == [5_000])
  }

  @Test func aBatchForSomePathsTakesOnlyThose() {
    var applies = ApplyState()
    applies.queue(item("a"))
    applies.queue(item("b"))
    let only = applies.take(only: [DocumentPath("b")], maxFiles: 10, maxBytes: 1_000)
    #expect(only.map(\.path) == [DocumentPath("b")])
    #expect(Set(applies.pendingApplies.keys) == [DocumentPath("a")])
    #expect(applies.deferred == [DocumentPath("a"), DocumentPath("b")])
  }

  @Test func droppingAPathForgetsItsVersionAndItsWait() {
    var applies = ApplyState()
    applies.queue(item("a"))
    applies.postpone(DocumentPath("b"))
    applies.drop(DocumentPath("a"))
    #expect(applies.pendingApplies.isEmpty)
    #expect(applies.deferred == [DocumentPath("b")])
  }

  @Test func aBatchIsDueByFilesOrBytes() {
    var applies = ApplyState()
    #expect(!applies.fillsBatch(maxFiles: 2, maxBytes: 100))
    applies.queue(item("a", size: 60))
    #expect(!applies.fillsBatch(maxFiles: 2, maxBytes: 100))
    applies.queue(item("b", size: 60))
    #expect(applies.fillsBatch(maxFiles: 3, maxBytes: 100))
    #expect(applies.fillsBatch(maxFiles: 2, maxBytes: 1_000))
  }

  @Test func theLastRunsIntentsAreHandedOverOnce() {
    let intent = ApplyIntent(path: Array("a.md".utf8), versionID: [1], contentHash: [2])
    var applies = ApplyState(intents: [intent])
    #expect(applies.takeIntents() == [intent])
    #expect(applies.takeIntents().isEmpty)
  }
}
