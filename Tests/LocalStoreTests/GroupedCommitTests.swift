import Dispatch
import Glibc
import LocalStore
import Testing

/// Tree changes are queued and committed in groups (issue 17): nothing is lost, nothing is
/// committed out of order, and a working file never goes before its inode's record does.
@Suite struct GroupedCommitTests {
  let folder = makeStateFolder()

  func file(_ inode: UInt64) -> InodeRecord {
    InodeRecord(
      inode: inode, mode: 0o100644, uid: 0, gid: 0, rdev: 0, accessTime: 0, modificationTime: 0,
      changeTime: 0, target: nil)
  }

  /// What the next mount after a crash sees.
  func committedInodes() throws -> Set<UInt64> {
    Set(try openCrashCopy(of: folder).load().inodes.map(\.inode))
  }

  @Test func queuedChangesCommitByThemselvesWithoutAFlush() throws {
    let store = try LocalStore(directory: folder)
    for inode in UInt64(10)..<UInt64(60) {
      try store.apply([
        .putInode(file(inode)),
        .putEntry(EntryRecord(parent: 1, name: [UInt8](String(inode).utf8), inode: inode)),
      ])
    }
    // The committing thread takes them within its window; the bound here is generous.
    var seen: Set<UInt64> = []
    for _ in 0..<200 {
      seen = try committedInodes()
      if seen.count == 50 { break }
      usleep(10_000)
    }
    #expect(seen == Set(10..<60))
    withExtendedLifetime(store) {}
  }

  @Test func aFlushCommitsEverythingQueuedBeforeIt() throws {
    let store = try LocalStore(directory: folder)
    try store.apply([.putInode(file(7)), .setNextInode(8)])
    try store.flush()
    #expect(try committedInodes() == [7])
    #expect(try openCrashCopy(of: folder).load().nextInode == 8)
  }

  @Test func theEnginesWritesCarryTheTreesQueuedChangesBeforeThem() throws {
    let store = try LocalStore(directory: folder)
    try store.apply([.putInode(file(9))])
    try store.applySync([.setMetadata(key: "cursor", value: [1, 2, 3])])
    // Committed in the engine's transaction, so nothing the engine wrote can be durable
    // without the tree change made before it.
    let other = try openCrashCopy(of: folder)
    #expect(Set(try other.load().inodes.map(\.inode)) == [9])
    #expect(try other.loadSync().metadata["cursor"] == [1, 2, 3])
    withExtendedLifetime(store) {}
  }

  @Test func aWorkingFileOutlivesTheCommitOfItsInodesRecord() throws {
    let store = try LocalStore(directory: folder)
    let inodes = UInt64(100)..<UInt64(300)
    for inode in inodes {
      let fd = openat(
        store.workingFiles, LocalStore.workingFileName(inode), O_CREAT | O_WRONLY, 0o600)
      #expect(fd >= 0)
      close(fd)
      try store.apply([.putInode(file(inode))])
    }
    try store.flush()
    // Drop them one by one while the next mount after a crash watches: at every moment, each
    // inode that is still committed still has its working file.
    for inode in inodes {
      try store.apply([.deleteInode(inode)])
      store.removeWorkingFile(inode)
      if inode % 20 == 0 {
        // Files first, then records: records are only ever dropped, so an inode committed
        // at the later look was committed at the earlier one and must have had its file.
        let files = Set(
          inodes.filter {
            faccessat(store.workingFiles, LocalStore.workingFileName($0), F_OK, 0) == 0
          })
        let committed = try committedInodes().intersection(inodes)
        #expect(committed.isSubset(of: files), "inodes committed without their working file")
      }
    }
    try store.flush()
    #expect(try committedInodes().isDisjoint(with: inodes))
    for inode in inodes {
      #expect(faccessat(store.workingFiles, LocalStore.workingFileName(inode), F_OK, 0) != 0)
    }
  }
  @Test func aGroupWhoseLaterChangesReplaceEarlierOnesCommitsWhatTheyLeave() throws {
    let store = try LocalStore(directory: folder)
    var changed = file(5)
    changed.mode = 0o100600
    let name: [UInt8] = Array("a".utf8)
    let attribute = ExtendedAttributeRecord(inode: 5, name: Array("user.x".utf8), value: [1])
    // The steps of a burst: the folder's row and the next inode number again and again, a name
    // that comes and goes, an inode made and dropped, an attribute set and removed.
    try store.apply([.putInode(file(5)), .putEntry(EntryRecord(parent: 1, name: name, inode: 5))])
    try store.apply([.setNextInode(6), .putInode(changed), .putExtendedAttribute(attribute)])
    try store.apply([.deleteEntry(parent: 1, name: name), .putInode(file(6)), .setNextInode(7)])
    try store.apply([.putEntry(EntryRecord(parent: 1, name: name, inode: 6)), .deleteInode(6)])
    try store.apply([.deleteExtendedAttribute(inode: 5, name: attribute.name)])
    try store.apply([.putInode(file(6)), .putExtendedAttribute(attribute), .setNextInode(9)])
    try store.flush()
    let loaded = try openCrashCopy(of: folder).load()
    #expect(loaded.inodes.sorted { $0.inode < $1.inode } == [changed, file(6)])
    #expect(loaded.entries == [EntryRecord(parent: 1, name: name, inode: 6)])
    #expect(loaded.extendedAttributes == [attribute])
    #expect(loaded.nextInode == 9)
    withExtendedLifetime(store) {}
  }

  @Test func syncingTheJournalBesideAFileCommitsWhatWasQueuedAndRunsTheWork() throws {
    let store = try LocalStore(directory: folder)
    try store.apply([.putInode(file(11))])
    var ran = 0
    let result = try store.syncJournal { () -> Int in
      ran += 1
      return 42
    }
    #expect(result == 42 && ran == 1)
    // Committed before the work ran: a crash now keeps it, without a flush.
    #expect(try committedInodes() == [11])
    // Side by side, many at once: each returns once its journal flush is done.
    let group = DispatchGroup()
    for _ in 0..<8 {
      DispatchQueue.global().async(group: group) {
        _ = try? store.syncJournal { 0 }
      }
    }
    #expect(group.wait(timeout: .now() + 30) == .success)
    withExtendedLifetime(store) {}
  }
  @Test func anFsyncsCommitLeavesTheUnlinksToTheQueuesThread() throws {
    let store = try LocalStore(directory: folder)
    let fd = openat(store.workingFiles, LocalStore.workingFileName(40), O_CREAT | O_WRONLY, 0o600)
    #expect(fd >= 0)
    close(fd)
    try store.apply([.putInode(file(40))])
    try store.flush()
    try store.apply([.deleteInode(40)])
    store.removeWorkingFile(40)
    try store.syncJournal { () -> Void in }
    #expect(try committedInodes().isEmpty)
    // The queue's thread removes it after its next commit, within its window.
    var present = true
    for _ in 0..<200 where present {
      present = faccessat(store.workingFiles, LocalStore.workingFileName(40), F_OK, 0) == 0
      if present { usleep(10_000) }
    }
    #expect(!present)
    withExtendedLifetime(store) {}
  }
}
