import DocumentModel
import Testing

@testable import SyncEngine

/// Local recording: a window's paths are busy exactly while it runs, and a path that could not
/// be read waits longer at each failure until a window records it.
@Suite struct RecordingStateTests {
  @Test func aWindowsPathsAreBusyUntilItEnds() {
    var recorder = RecordingState()
    let coverage: Set = [DocumentPath("a"), DocumentPath("a/b")]
    recorder.begin(coverage)
    #expect(recorder.isRecording(DocumentPath("a/b")))
    #expect(!recorder.isRecording(DocumentPath("c")))
    recorder.begin([DocumentPath("c")])
    recorder.end(coverage)
    #expect(recorder.recording == [DocumentPath("c")])
  }

  @Test func aPathThatCannotBeReadWaitsLongerEachTimeUntilRecorded() {
    var recorder = RecordingState()
    let path = DocumentPath("big.iso")
    let first = recorder.failed(path, reason: "No space left on device", at: 1_000, began: 900)
    let second = recorder.failed(path, reason: "No space left on device", at: 2_000, began: 1_900)
    #expect(first.delay == RecordRetry.firstDelay && second.delay == 2 * first.delay)
    #expect(
      recorder.heldBack([path, DocumentPath("other")], at: 2_100, syncAskedAt: nil) == [path])
    // A sync asked for since the last attempt began tries it now.
    #expect(recorder.heldBack([path], at: 2_100, syncAskedAt: 1_950).isEmpty)
    #expect(recorder.firstFailure == "cannot read big.iso to sync it: No space left on device")

    let otherCleared = recorder.recorded([DocumentPath("other")])
    #expect(!otherCleared)
    let pathCleared = recorder.recorded([path])
    #expect(pathCleared)
    #expect(recorder.unrecordable.isEmpty && recorder.firstFailure == nil)
    #expect(recorder.heldBack([path], at: 2_100, syncAskedAt: nil).isEmpty)
  }

  @Test func theReportNamesTheFailuresOfAttemptsSinceATime() {
    var recorder = RecordingState()
    for (index, name) in ["e", "d", "c", "b", "a"].enumerated() {
      _ = recorder.failed(
        DocumentPath(name), reason: "EIO", at: 100 + UInt64(index), began: UInt64(index) * 10)
    }
    #expect(recorder.report(since: 100) == nil)
    #expect(recorder.report(since: 30) == "cannot read a (EIO), b (EIO) to sync it; trying again")
    #expect(
      recorder.report(since: 0)
        == "cannot read a (EIO), b (EIO), c (EIO) and 2 more to sync it; trying again")
  }

  @Test func newIgnoreRulesReplaceTheOldOnesOnce() {
    var recorder = RecordingState()
    #expect(recorder.adopt(.builtIn) == nil)
    let rules = IgnoreRules(fileContent: Array("*.log\n".utf8))
    #expect(recorder.adopt(rules) == .builtIn)
    #expect(recorder.ignore == rules)
    #expect(recorder.ignore.isIgnored(DocumentPath("x.log")))
    #expect(recorder.adopt(rules) == nil)
  }
}
