import Glibc
import Synchronization
import Testing

@testable import LocalStore

/// When the queue's own thread commits: a window after the oldest change, or at once for a
/// while after an `fsync` (issue 17: an editor's next save finds its names committed).
@Suite struct CommitQueueTests {
  /// What the queue's thread committed: one entry per commit, whether it came early, and how
  /// many changes it took.
  final class Commits: Sendable {
    let taken = Mutex<[(eager: Bool, changes: Int)]>([])
    var all: [(eager: Bool, changes: Int)] { taken.withLock { $0 } }

    /// Waits up to 10 s for `count` commits.
    func wait(for count: Int) -> [(eager: Bool, changes: Int)] {
      for _ in 0..<1000 {
        let now = all
        if now.count >= count { return now }
        usleep(10_000)
      }
      return all
    }
  }

  /// A queue whose window is far longer than any test, committing into `commits`.
  func start(eagerSpan: Duration) -> (CommitQueue, Commits) {
    let queue = CommitQueue(window: .seconds(600), eagerSpan: eagerSpan)
    let commits = Commits()
    queue.startCommitting { [queue] eager in
      let batch = queue.take()
      commits.taken.withLock { $0.append((eager, batch.changes.count)) }
      queue.committed()
      return true
    }
    return (queue, commits)
  }

  @Test func withoutAnFsyncAChangeWaitsForItsWindow() {
    let (queue, commits) = start(eagerSpan: .seconds(600))
    defer { queue.stop() }
    queue.add([.setNextInode(2)])
    queue.add([.setNextInode(3)])
    usleep(300_000)
    #expect(commits.all.isEmpty)
  }

  @Test func afterAnFsyncChangesCommitAsTheyCome() {
    let (queue, commits) = start(eagerSpan: .seconds(600))
    defer { queue.stop() }
    queue.add([.setNextInode(2)])
    usleep(100_000)
    #expect(commits.all.isEmpty)
    // What waited commits at once, and so does each change after it.
    queue.expectFlushes()
    #expect(commits.wait(for: 1).map(\.eager) == [true])
    queue.add([.setNextInode(3), .setNextInode(4)])
    let both = commits.wait(for: 2)
    #expect(both.map(\.eager) == [true, true])
    #expect(both.map(\.changes) == [1, 2])
  }

  /// A commit that keeps failing (a full disk) is tried again less and less often, up to a
  /// second apart: every window (5 ms), it cost 3% of a processor until the disk had room.
  /// The change waits meanwhile, and commits once a commit can.
  @Test func aFailingCommitIsTriedLessAndLessOften() {
    let queue = CommitQueue(window: .milliseconds(5), eagerSpan: .zero)
    let tries = Mutex(0)
    let full = Atomic(true)
    let committed = Mutex<[Int]>([])
    queue.startCommitting { [queue] _ in
      tries.withLock { $0 += 1 }
      let batch = queue.take()
      if full.load(ordering: .acquiring) {
        queue.putBack(batch, failure: "database or disk is full")
      } else {
        committed.withLock { $0.append(batch.changes.count) }
        queue.committed()
      }
      return true
    }
    defer { queue.stop() }
    queue.add([.setNextInode(2)])
    let clock = ContinuousClock()
    let start = clock.now
    usleep(1_000_000)
    let elapsed = clock.now - start
    // 5, 10, 20 ... 640 ms, then a second apart: 8 or 9 tries in the first second, where a
    // try each window made about 180. A loaded machine stretches the wait, not the count.
    let count = tries.withLock { $0 }
    let seconds = Double(elapsed.components.seconds) + 1
    #expect(count >= 2 && Double(count) <= 10 + seconds, "\(count) tries in \(elapsed)")
    #expect(queue.failure?.reason == "database or disk is full")
    full.store(false, ordering: .releasing)
    for _ in 0..<300 where committed.withLock({ $0.isEmpty }) { usleep(10_000) }
    #expect(committed.withLock { $0 } == [1])
    #expect(queue.failure == nil)
  }

  @Test func theEarlyCommitsEndOnceTheSpanHasPassed() {
    let (queue, commits) = start(eagerSpan: .milliseconds(200))
    defer { queue.stop() }
    queue.expectFlushes()
    usleep(500_000)
    queue.add([.setNextInode(2)])
    usleep(300_000)
    #expect(commits.all.isEmpty)
  }
}
