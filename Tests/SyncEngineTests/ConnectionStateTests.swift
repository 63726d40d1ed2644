import DocumentModel
import Testing

@testable import SyncEngine

/// The link with the hub: a sync request is completed only by a turn that began after it,
/// offline and failing move as the hub and this device answer, and `prune` and `forget`
/// requests get their own outcomes.
@Suite struct ConnectionStateTests {
  @Test func aSyncRequestIsCompletedOnlyByATurnThatBeganAfterIt() {
    var connection = ConnectionState()
    #expect(connection.beginTurn() == (0, false))
    let first = connection.requestSync(at: 100)
    #expect(connection.syncRequestedAt == 100)
    let turn = connection.beginTurn()
    #expect(turn.target == first && turn.forced)
    // Asked while that turn runs: it may have missed what came before the request.
    let second = connection.requestSync(at: 200)
    connection.completeSync(through: turn.target)
    #expect(connection.isCompleted(first))
    #expect(!connection.isCompleted(second))
    #expect(connection.beginTurn() == (second, true))
    // An older turn ending late never takes completion back.
    connection.completeSync(through: second)
    connection.completeSync(through: first)
    #expect(connection.isCompleted(second))
  }

  @Test func aRequestNobodyWaitsForNoLongerHurriesTheLoop() {
    var connection = ConnectionState()
    _ = connection.requestSync(at: 1)
    connection.syncWaiterLeft()
    #expect(connection.beginTurn().forced == false)
    connection.syncWaiterLeft()
    #expect(connection.syncWaiters == 0)
  }

  @Test func offlineIsTheHubsFailureAndFailingIsThisDevicesOwn() {
    var connection = ConnectionState()
    let began = connection.wentOffline("connection refused", at: 1_000)
    #expect(began)
    let beganAgain = connection.wentOffline("timed out", at: 2_000)
    #expect(!beganAgain)
    #expect(connection.offline?.since == 1_000 && connection.offline?.reason == "timed out")

    // The hub answered before this device failed: online, and failing.
    let failingBegan = connection.failedHere("disk full", at: 3_000, request: 4)
    #expect(failingBegan)
    #expect(connection.offline == nil)
    let failingBeganAgain = connection.failedHere("still full", at: 4_000, request: 5)
    #expect(!failingBeganAgain)
    #expect(connection.failing?.since == 3_000 && connection.failing?.reason == "still full")
    #expect(connection.failureSeen(by: 5) == "still full")
    // A request made after the failed turn began has not had its try.
    #expect(connection.failureSeen(by: 6) == nil)

    let offlineAgain = connection.wentOffline("gone", at: 5_000)
    #expect(offlineAgain)
    #expect(connection.cameOnline() == 5_000)
    #expect(connection.cameOnline() == nil)
    connection.succeeded(at: 6_000)
    #expect(connection.failing == nil && connection.offline == nil && connection.lastSync == 6_000)
  }

  @Test func failingBeginsAndEndsOnceHoweverItsCausesOverlap() {
    var connection = ConnectionState()
    #expect(connection.failureChanged(failing: nil, at: 1) == nil)
    #expect(connection.failureChanged(failing: "disk full", at: 2) == .began)
    #expect(connection.failureChanged(failing: "cannot read a.md", at: 3) == nil)
    #expect(connection.failingSince == 2)
    #expect(connection.failureChanged(failing: nil, at: 4) == .ended(since: 2))
    #expect(connection.failureChanged(failing: nil, at: 5) == nil)
    #expect(connection.failingSince == nil)
  }

  @Test func transfersAreToldOnceWhenTheirDirectionGoesIdle() {
    var connection = ConnectionState()
    #expect(connection.uploadIdle() == nil)
    connection.noteUploaded(files: 2, bytes: 10)
    connection.noteUploaded(files: 1, bytes: .max)
    let up = connection.uploadIdle()
    #expect(up?.files == 3 && up?.bytes == .max)
    #expect(connection.uploadIdle() == nil)

    connection.noteDownloadNeeded(files: 2, bytes: .max)
    connection.noteDownloadNeeded(files: 1, bytes: 5)
    #expect(connection.download.totalFiles == 3 && connection.download.totalBytes == .max)
    #expect(connection.downloadIdle() == nil)
    connection.noteDownloadNeeded(files: 1, bytes: 7)
    connection.noteDownloaded(files: 1, bytes: 7)
    let down = connection.downloadIdle()
    #expect(down?.doneFiles == 1 && down?.doneBytes == 7 && down?.totalFiles == 1)
    #expect(connection.download == SyncStatus.Transfer())
  }

  @Test func aPruneIsDueWhenAskedOrADayAfterTheLast() throws {
    var connection = ConnectionState()
    connection.lastPrune = 1_000
    #expect(connection.pruneDue(at: 1_500, interval: 1_000) == (0, false))
    #expect(connection.pruneDue(at: 2_000, interval: 1_000) == (0, true))
    let request = connection.requestPrune()
    #expect(connection.pruneDue(at: 1_500, interval: 1_000) == (request, true))
    #expect(connection.pruneOutcome(of: request) == nil)
    let report = PruneReport(policy: "keep all", versions: 3)
    connection.pruned(request: request, result: .success(report), at: 1_600)
    #expect(connection.lastPrune == 1_600)
    #expect(connection.pruneDue(at: 1_700, interval: 1_000) == (request, false))
    #expect(try connection.pruneOutcome(of: request)?.get() == report)
    // A request made after that prune began waits for the next.
    let later = connection.requestPrune()
    #expect(connection.pruneOutcome(of: later) == nil)
  }

  @Test func aForgetRequestIsQueuedRunOrAnsweredOnce() throws {
    var connection = ConnectionState()
    let first = connection.requestForget(DocumentPath("a.md"))
    let second = connection.requestForget(DocumentPath("b.md"))
    let running = connection.startForget()
    #expect(running?.request == first && running?.path == DocumentPath("a.md"))
    // Its caller cannot drop the one running; it can drop one still queued.
    let droppedRunning = connection.dropForget(first)
    #expect(!droppedRunning)
    let droppedQueued = connection.dropForget(second)
    #expect(droppedQueued)
    let droppedTwice = connection.dropForget(second)
    #expect(!droppedTwice)

    // Offline: it stays queued for the next turn, with no outcome.
    connection.endForget(first, result: nil)
    #expect(connection.forgetRunning == nil)
    #expect(connection.takeForgetOutcome(first) == nil)
    #expect(connection.startForget()?.request == first)
    let outcome = ForgetOutcome(documents: 1, versions: 2)
    connection.endForget(first, result: .success(outcome))
    #expect(connection.startForget() == nil)
    #expect(try connection.takeForgetOutcome(first)?.get() == outcome)
    #expect(connection.takeForgetOutcome(first) == nil)
  }
}
