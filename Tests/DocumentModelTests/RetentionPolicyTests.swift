import DocumentModel
import Testing

/// Which earlier versions retention lets go, identically on every device.
@Suite struct RetentionPolicyTests {
  static let minute: UInt64 = 60_000
  static let hour: UInt64 = 3_600_000
  static let day: UInt64 = 86_400_000

  /// Earlier versions of one document saved at `now - age` for each age, oldest first.
  func versions(ages: [UInt64], now: UInt64) -> [VersionRecord] {
    var set = VersionSet()
    var author = device(1)
    var previous: VersionRecord?
    var made: [VersionRecord] = []
    for (index, age) in ages.sorted(by: >).enumerated() {
      let record = make(
        &author, &set, "plan.md", fileContent("save \(index)"),
        parents: previous.map { [$0] } ?? [], now: now - age)
      made.append(record)
      previous = record
    }
    return made
  }

  @Test func keepLetsGoWhatIsOlderAndKeepZeroLetsGoEverything() {
    let now = 100 * Self.day
    let earlier = versions(ages: [3 * Self.day, 2 * Self.hour, 5 * Self.minute], now: now)
    let twoDays = RetentionPolicy.keep(milliseconds: 2 * Self.day)
    #expect(twoDays.released(earlier, now: now).map(\.id) == [earlier[0].id])
    #expect(RetentionPolicy.keep(milliseconds: 0).released(earlier, now: now).count == 3)
  }

  @Test func staggeredThinsByAgeAndLetsGoAfterThirtyDays() {
    let now = 100 * Self.day
    // Within the first hour, saves 10 s apart: one per 30 s stays.
    let recent = (0..<6).map { UInt64($0) * 10_000 + 1000 }
    // Within the first day, saves 10 minutes apart: one per hour stays.
    let today = (0..<6).map { 2 * Self.hour + UInt64($0) * 10 * Self.minute }
    let old = [40 * Self.day]
    let earlier = versions(ages: recent + today + old, now: now)
    let released = Set(RetentionPolicy.staggered.released(earlier, now: now).map(\.id))
    let kept = earlier.filter { !released.contains($0.id) }
    #expect(kept.count == 2 + 1, "\(kept.map(\.modified))")
    #expect(released.contains(earlier[0].id))  // 40 days old
    // The same versions and time give the same answer, in any order.
    let again = Set(RetentionPolicy.staggered.released(earlier.reversed(), now: now).map(\.id))
    #expect(again == released)
  }

  @Test func serializedAndDurationsRoundTrip() {
    for policy in [RetentionPolicy.staggered, .keep(milliseconds: 0), .keep(milliseconds: 5)] {
      #expect(RetentionPolicy(serialized: policy.serialized) == policy)
    }
    #expect(RetentionPolicy(serialized: "keep forever") == nil)
    #expect(RetentionPolicy.milliseconds(parsing: "30d") == 30 * Self.day)
    #expect(RetentionPolicy.milliseconds(parsing: "90s") == 90_000)
    #expect(RetentionPolicy.milliseconds(parsing: "0") == 0)
    #expect(RetentionPolicy.milliseconds(parsing: "soon") == nil)
    #expect(RetentionPolicy.duration(30 * Self.day) == "30d")
  }

  @Test func releasedVersionsLeaveTheHistoryAndTheirRecordsKeepTheHeads() {
    var set = VersionSet()
    var a = device(1)
    let first = make(&a, &set, "plan.md", fileContent("one"))
    let second = make(&a, &set, "plan.md", fileContent("two"), parents: [first])
    let third = make(&a, &set, "plan.md", fileContent("three"), parents: [second])
    var index = HistoryIndex(set)
    index.release([first.id], in: set)
    #expect(index.earlierVersions(at: path("plan.md"), in: set).map(\.id) == [second.id])
    #expect(index == HistoryIndex(set, released: [first.id]))
    index.release([second.id], in: set)
    #expect(index.earlierVersions(at: path("plan.md"), in: set).map(\.id).isEmpty)
    #expect(index.folders(in: .root).isEmpty)
    // The records stay, so the heads are what they were.
    #expect(set.heads(at: path("plan.md")).map(\.id) == [third.id])
  }
}
