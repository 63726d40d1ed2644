import DocumentModel
import Testing

/// The policies of files on demand: the local budget and its hysteresis, crawlers, and the
/// state attribute.
@Suite struct OnDemandPolicyTests {
  static let mib: UInt64 = 1 << 20

  func candidate(
    _ key: String, _ mib: UInt64, used: Int64, pinned: Bool = false, open: Bool = false,
    unsynced: Bool = false
  ) -> EvictionCandidate {
    EvictionCandidate(
      key: key, bytes: mib * Self.mib, lastUsedMilliseconds: used, isPinned: pinned, isOpen: open,
      isUnsynced: unsynced)
  }

  @Test func nothingGoesWithinTheLimitAndPastItTheLeastRecentlyUsedGoToTheLowMark() {
    let held = [
      candidate("a", 40, used: 10), candidate("b", 30, used: 30), candidate("c", 20, used: 20),
      candidate("d", 10, used: 40),
    ]
    // 100 MiB held, 100 MiB allowed: nothing.
    #expect(LocalBudget.plan(held, limit: 100 * Self.mib).evict.isEmpty)
    // 100 held, 95 allowed: down to 85.5 (the low mark), least recently used first: a (40).
    let plan = LocalBudget.plan(held, limit: 95 * Self.mib)
    #expect(plan.evict == ["a"])
    #expect(plan.bytesAfter == 60 * Self.mib && plan.shortfall == 0)
    // 100 held, 50 allowed: a, then c (down to 40 ≤ 45).
    #expect(LocalBudget.plan(held, limit: 50 * Self.mib).evict == ["a", "c"])
    // 20 allowed: a, c, b (down to 10 ≤ 18); d, the most recent, stays.
    #expect(LocalBudget.plan(held, limit: 20 * Self.mib).evict == ["a", "c", "b"])
  }

  @Test func pinnedOpenAndUnsyncedContentIsNeverEvictedAndTheShortfallIsSaid() {
    let held = [
      candidate("pinned", 50, used: 1, pinned: true),
      candidate("open", 30, used: 2, open: true),
      candidate("unsynced", 15, used: 3, unsynced: true),
      candidate("free", 5, used: 4),
    ]
    let plan = LocalBudget.plan(held, limit: 10 * Self.mib)
    #expect(plan.evict == ["free"])
    #expect(plan.bytesAfter == 95 * Self.mib)
    #expect(plan.shortfall == 95 * Self.mib - 9 * Self.mib)
  }

  @Test func theDiskBoundsTheLimitSoAJoiningDeviceNeverFillsIt() {
    let gib: UInt64 = 1 << 30
    // A 256 GiB disk keeps 25.6 GiB free; with 30 GiB free and 4 GiB held, 8.4 GiB in all.
    let reserve = LocalBudget.reserve(fileSystemBytes: 256 * gib)
    #expect(reserve == 256 * gib / 10)
    let unlimited = LocalBudget(limit: nil)
    #expect(
      unlimited.effectiveLimit(held: 4 * gib, available: 30 * gib, fileSystemBytes: 256 * gib)
        == 4 * gib + 30 * gib - reserve)
    // A disk already past its reserve: what is held is the limit, so new content evicts old.
    #expect(
      unlimited.effectiveLimit(held: 4 * gib, available: gib, fileSystemBytes: 256 * gib)
        == 4 * gib)
    // A limit asked for applies when the disk allows more.
    #expect(
      LocalBudget(limit: gib).effectiveLimit(
        held: 0, available: 100 * gib, fileSystemBytes: 256 * gib) == gib)
    // Small and large disks: at least 2 GiB, at most 50 GiB kept free.
    #expect(LocalBudget.reserve(fileSystemBytes: 8 * gib) == 2 * gib)
    #expect(LocalBudget.reserve(fileSystemBytes: 4096 * gib) == 50 * gib)
  }

  @Test func crawlersAreKnownByTheirExecutableAndPeopleAdjustTheList() throws {
    let rules = CrawlerRules()
    #expect(rules.isCrawler(executable: "/usr/libexec/tracker-miner-fs-3"))
    #expect(rules.isCrawler(executable: "/usr/bin/ffmpegthumbnailer"))
    #expect(rules.isCrawler(executable: "/usr/sbin/clamd (deleted)"))
    #expect(!rules.isCrawler(executable: "/usr/bin/cat"))
    // Another user's process: only the 15-byte command name is readable.
    #expect(rules.isCrawler(executable: nil, command: "tracker-miner-f"))
    #expect(!rules.isCrawler(executable: nil, command: "cp"))
    let adjusted = try CrawlerRules(
      adjusting: """
        # let the virus scanner in, keep my own indexer out
        -clamd
        my-indexer   # a comment after a name

        """)
    #expect(!adjusted.isCrawler(executable: "/usr/sbin/clamd"))
    #expect(adjusted.isCrawler(executable: "/opt/bin/my-indexer"))
    #expect(adjusted.isCrawler(executable: "/usr/bin/tumblerd"))
    #expect(throws: CrawlerRulesError(line: 2, text: "bad name")) {
      try CrawlerRules(adjusting: "ok\nbad name\n")
    }
    #expect(throws: CrawlerRulesError.self) { try CrawlerRules(adjusting: "/usr/bin/x") }
  }

  @Test func theStateAttributeSaysWhereTheContentIs() {
    #expect(ContentAvailability.of(present: 0, total: 4, pinned: false) == .online)
    #expect(ContentAvailability.of(present: 2, total: 4, pinned: false) == .partial)
    #expect(ContentAvailability.of(present: 4, total: 4, pinned: false) == .local)
    #expect(ContentAvailability.of(present: 0, total: 0, pinned: false) == .local)
    #expect(ContentAvailability.of(present: 1, total: 4, pinned: true) == .pinned)
    #expect(ContentAvailability.local.attribute(waitingToUpload: true) == "local upload")
    #expect(ContentAvailability.online.attribute(waitingToUpload: false) == "online")
  }
}
