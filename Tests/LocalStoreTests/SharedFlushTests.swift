import Glibc
import Testing

@testable import LocalStore

/// A working file's fsync carries the journal's pages only while they overwrite blocks whose
/// place a journal fdatasync made durable (issue 17: one disk flush per fsync, not two).
@Suite struct SharedFlushTests {
  let folder = makeStateFolder()

  func file(_ inode: UInt64) -> InodeRecord {
    InodeRecord(
      inode: inode, mode: 0o100644, uid: 0, gid: 0, rdev: 0, accessTime: 0, modificationTime: 0,
      changeTime: 0, target: nil)
  }

  @Test func theJournalRidesOnAFileFlushOnlyWithinItsDurableSize() throws {
    let store = try LocalStore(directory: folder)
    let shared = try #require(
      store.sharedFlush, "the test machines keep their state on ext4, Linux 6.6 or later")
    try store.apply([.putInode(file(10))])
    try store.flush()
    #expect(!shared.writeJournalForNextFlush(), "the journal grew: its size is not durable")
    store.syncJournal()
    #expect(shared.writeJournalForNextFlush(), "nothing written since its own fdatasync")
    // A commit that appends to the journal needs its own fdatasync again.
    try store.apply((20..<60).map { .putInode(file($0)) })
    try store.flush()
    #expect(!shared.writeJournalForNextFlush())
    let synced = try store.syncJournal { () -> Int32 in 0 }
    #expect(synced == 0 && shared.writeJournalForNextFlush(), "the fsync's own flush of it counts")
    // Truncated, the journal's next pages are new blocks.
    store.checkpoint()
    try store.apply([.putInode(file(70))])
    try store.flush()
    #expect(!shared.writeJournalForNextFlush())
    #expect(try openCrashCopy(of: folder).load().inodes.count == 42)
    withExtendedLifetime(store) {}
  }

  @Test func aSizeMeasuredAcrossATruncationIsNotTrusted() throws {
    let store = try LocalStore(directory: folder)
    let shared = try #require(store.sharedFlush)
    try store.apply([.putInode(file(10))])
    try store.flush()
    let before = shared.measure()
    shared.journalWillShrink()
    shared.journalShrank()
    shared.noteSynced(before)
    #expect(!shared.writeJournalForNextFlush())
    withExtendedLifetime(store) {}
  }

  /// The commit queue's thread starts the journal's pages on their way only where an `fsync` is
  /// expected, a file is open for writing, and no commit follows at once to carry them with its
  /// own: one write to the disk a save, not one a commit.
  @Test func theJournalsPagesLeaveWithTheLastCommitBeforeAnFsync() {
    #expect(
      LocalStore.startsJournalWrite(eager: true, filesOpenForWriting: 1, morePending: false))
    // A save's rename, committed after the next save's create has opened its file.
    #expect(
      !LocalStore.startsJournalWrite(eager: true, filesOpenForWriting: 1, morePending: true))
    // A save's rename, with no file open: the next create's commit carries its pages.
    #expect(
      !LocalStore.startsJournalWrite(eager: true, filesOpenForWriting: 0, morePending: false))
    // `tar`, `cp -r`: no `fsync` expected, so the kernel writes the pages when it will.
    #expect(
      !LocalStore.startsJournalWrite(eager: false, filesOpenForWriting: 3, morePending: false))
  }
}
