import DocumentModel
import Testing

@testable import SyncEngine

/// Content on its way: a missing blob is tried again less and less often, and at once when a
/// device has put what it awaited; an unreadable blob is a missing one until it settles; small
/// content held in memory is counted as it comes and goes; uploads ahead of their records.
@Suite struct ContentStateTests {
  private let a = ContentHash(of: Array("a".utf8))
  private let b = ContentHash(of: Array("b".utf8))

  @Test func aMissingBlobIsTriedAgainLessAndLessOftenUpToAMinute() {
    var content = ContentState()
    let new = content.noteMissing(a, .fetching, awaiting: nil, retryAt: 100)
    // Noted again while it waits: not new, so the loop is not woken again.
    let again = content.noteMissing(a, .fetching, awaiting: nil, retryAt: 5)
    #expect(new && !again)
    #expect(content.due(at: 99).isEmpty)
    #expect(content.due(at: 100) == [a])
    var now: UInt64 = 100
    var waits: [UInt64] = []
    for _ in 0..<9 {
      content.failedAgain(a, at: now, reason: nil, awaited: nil)
      let next = content.missing[a]!.retryAt
      waits.append(next - now)
      #expect(content.due(at: next - 1).isEmpty)
      #expect(content.due(at: next) == [a])
      now = next
    }
    #expect(waits == [1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000])
    content.settled(a)
    #expect(content.missing.isEmpty && content.due(at: .max).isEmpty)
    // A try that fails for a blob nobody waits for any more changes nothing.
    content.failedAgain(a, at: now, reason: .missingOnHub, awaited: nil)
    #expect(content.missing.isEmpty)
  }

  @Test func aPreciseReasonReplacesFetchingAndDamageOnTheHubIsKept() {
    var content = ContentState()
    _ = content.noteMissing(a, .fetching, awaiting: nil, retryAt: 0)
    _ = content.noteMissing(a, .damagedOnHub, awaiting: a.bytes, retryAt: 0)
    #expect(content.waitReason(a) == .damagedOnHub)
    // Still wanted on the next try: it is still the hub's damage, which says more.
    content.failedAgain(a, at: 0, reason: .missingOnHub, awaited: a.bytes)
    #expect(content.waitReason(a) == .damagedOnHub)
    // "Fetching" never hides what is known.
    _ = content.noteMissing(a, .fetching, awaiting: nil, retryAt: 0)
    #expect(content.waitReason(a) == .damagedOnHub)
    #expect(content.waitReason(b) == nil)
  }

  @Test func whatWasPutAgainIsDueAtOnce() {
    var content = ContentState()
    _ = content.noteMissing(a, .damagedOnHub, awaiting: a.bytes, retryAt: 10_000)
    _ = content.noteMissing(b, .missingOnHub, awaiting: b.bytes, retryAt: 10_000)
    content.fetchAgainWhatWasPut(stillWanted: [b.bytes])
    #expect(content.due(at: 0) == [a])
    #expect(content.waitReason(a) == .fetching && content.waitReason(b) == .missingOnHub)
  }

  @Test func anUnreadableBlobIsMissingUntilItSettles() {
    var content = ContentState()
    let new = content.noteUnreadable(a, retryAt: 5)
    #expect(new)
    #expect(content.isUnreadable(a) && content.waitReason(a) == .damagedHere)
    #expect(content.due(at: 5) == [a])
    // Tried and failed: still unreadable, still missing.
    content.failedAgain(a, at: 5, reason: nil, awaited: nil)
    #expect(content.isUnreadable(a) && content.missing[a] != nil)
    content.settled(a)
    #expect(!content.isUnreadable(a) && content.missing[a] == nil)
  }

  @Test func heldContentIsCountedAsItComesAndGoes() {
    var content = ContentState()
    content.hold([1, 2, 3], for: a)
    content.hold([4, 5], for: b)
    #expect(content.fetchedBytes == 5 && content.isHeld(a) && content.isHeld(b))
    // The same content fetched again replaces, never doubles, what is counted.
    content.hold([1, 2, 3], for: a)
    #expect(content.fetchedBytes == 5)
    content.release(b)
    content.release(b)
    #expect(content.fetchedBytes == 3 && !content.isHeld(b))
    let taken = content.takeFetched()
    #expect(taken == [a: [1, 2, 3]])
    #expect(content.fetchedBytes == 0 && content.fetched.isEmpty)
  }

  @Test func uploadsCountUntilTheirRecordsAreSent() {
    var content = ContentState()
    let first = VersionID(Digest256(bytes: [UInt8](repeating: 1, count: 32))!)
    let second = VersionID(Digest256(bytes: [UInt8](repeating: 2, count: 32))!)
    content.noteUploaded(first)
    content.noteUploaded(second)
    content.recordsSent([first])
    #expect(content.uploaded == [second])
    content.outboxEmptied()
    #expect(content.uploaded.isEmpty)
    content.sent(.max - 1)
    content.sent(5)
    content.received(7)
    #expect(content.bytesSent == .max && content.bytesReceived == 7)
  }
}
