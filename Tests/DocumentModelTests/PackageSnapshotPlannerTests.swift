import DocumentModel
import Testing

/// When a package's snapshot is taken: after the quiet window, never while a file in it is
/// open for writing, and kept only if nothing changed while it was read.
@Suite("Package snapshot planner")
struct PackageSnapshotPlannerTests {
  private let quiet: UInt64 = 150

  private func activity(_ target: String, writers: Int = 0, at time: UInt64)
    -> PackageFileActivity
  {
    PackageFileActivity(path: DocumentPath(target), writers: writers, lastChange: time)
  }

  private func decide(
    _ files: [PackageFileActivity], removal: UInt64? = nil, snapshot: UInt64? = nil,
    now: UInt64
  ) -> PackageSnapshotDecision {
    PackageSnapshotPlanner.decide(
      files: files, lastRemoval: removal, lastSnapshotStarted: snapshot, now: now,
      quietMilliseconds: quiet)
  }

  @Test func aSnapshotWaitsForTheQuietWindowAndNotAMillisecondMore() {
    let files = [activity("HEAD", at: 1_000), activity("index", at: 900)]
    #expect(decide(files, now: 1_000) == .waitUntil(1_150))
    #expect(decide(files, now: 1_149) == .waitUntil(1_150))
    #expect(decide(files, now: 1_150) == .snapshotNow)
    #expect(decide(files, now: 9_999) == .snapshotNow)
  }

  @Test func aFileOpenForWritingHoldsTheSnapshotWhateverTheTime() {
    let files = [
      activity("objects/pack/tmp_pack_1", writers: 1, at: 1_000), activity("HEAD", at: 10),
      activity("index", writers: 2, at: 990),
    ]
    let waiting = PackageSnapshotDecision.waitForWriters([
      DocumentPath("index"), DocumentPath("objects/pack/tmp_pack_1"),
    ])
    #expect(decide(files, now: 1_000) == waiting)
    #expect(decide(files, now: 100_000) == waiting)
  }

  @Test func nothingChangedSinceTheLastSnapshotStartedIsUpToDate() {
    #expect(decide([], now: 5) == .upToDate)
    #expect(decide([activity("a", at: 999)], snapshot: 1_000, now: 2_000) == .upToDate)
    // A change in the very millisecond the read started may be missing from it.
    #expect(decide([activity("a", at: 1_000)], snapshot: 1_000, now: 2_000) == .snapshotNow)
    // A database a program keeps open, unchanged since the snapshot: nothing to take.
    #expect(
      decide([activity("zotero.sqlite", writers: 1, at: 500)], snapshot: 1_000, now: 2_000)
        == .upToDate)
    #expect(
      decide([activity("zotero.sqlite", writers: 1, at: 1_500)], snapshot: 1_000, now: 2_000)
        == .waitForWriters([DocumentPath("zotero.sqlite")]))
  }

  @Test func aRemovalIsAChangeNoFileShows() {
    #expect(decide([], removal: 1_000, now: 1_100) == .waitUntil(1_150))
    #expect(decide([activity("a", at: 10)], removal: 1_000, now: 1_150) == .snapshotNow)
    #expect(decide([], removal: 999, snapshot: 1_000, now: 1_150) == .upToDate)
  }

  @Test func aCommitOfTwentyFilesIsOneSnapshotAfterItsLastWrite() {
    // `git commit`: objects, then the index, then the ref and the logs, 5 ms apart, each file
    // open while it is written. At no moment before the last write plus the window may the
    // planner say to snapshot.
    var files: [PackageFileActivity] = []
    var decisions: [PackageSnapshotDecision] = []
    for step in 0..<20 {
      let time = UInt64(10_000 + step * 5)
      files.append(activity("f\(step)", writers: 1, at: time))
      decisions.append(decide(files, snapshot: 9_000, now: time))
      files[step] = activity("f\(step)", at: time + 1)
      decisions.append(decide(files, snapshot: 9_000, now: time + 1))
    }
    #expect(!decisions.contains(.snapshotNow))
    let last: UInt64 = 10_000 + 19 * 5 + 1
    #expect(decide(files, snapshot: 9_000, now: last + quiet - 1) == .waitUntil(last + quiet))
    #expect(decide(files, snapshot: 9_000, now: last + quiet) == .snapshotNow)
  }

  @Test func aTimeAtTheEndOfTheClockWaitsForever() {
    #expect(decide([activity("a", at: .max - 10)], now: 0) == .waitUntil(.max))
  }

  @Test func aReadIsKeptOnlyIfNothingChangedOrOpenedForWritingMeanwhile() {
    let before = [activity("a", at: 999), activity("b", at: 10)]
    #expect(PackageSnapshotPlanner.isConsistent(startedAt: 1_000, files: before, lastRemoval: 999))
    #expect(
      !PackageSnapshotPlanner.isConsistent(
        startedAt: 1_000, files: before + [activity("c", at: 1_000)], lastRemoval: nil))
    #expect(
      !PackageSnapshotPlanner.isConsistent(
        startedAt: 1_000, files: before, lastRemoval: 1_000))
    #expect(
      !PackageSnapshotPlanner.isConsistent(
        startedAt: 1_000, files: [activity("a", writers: 1, at: 10)], lastRemoval: nil))
  }
}
