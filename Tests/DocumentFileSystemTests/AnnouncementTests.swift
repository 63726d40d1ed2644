import DocumentFileSystem
import DocumentModel
import Glibc
import LocalStore
import SyncEngine
import SystemPackage
import Testing

/// What sync's changes post for the thread that raises their file notifications, and how the
/// file system answers that thread's requests: from what the tree holds, changing nothing.
@Suite struct AnnouncementTests {
  let folder = temporaryFolder()
  let me = Caller(uid: getuid(), gid: getgid())
  let root = DocumentFileSystem.rootInode
  let path = DocumentPath(components: [bytes("doc.txt")])
  /// The raising process's id, as its requests carry it.
  let announcer: Int32 = 4242

  func mounted() throws -> (LocalStore, DocumentFileSystem) {
    let store = try LocalStore(directory: folder)
    let fs = try DocumentFileSystem(store: store, owner: me)
    fs.announcements.begin(process: announcer)
    return (store, fs)
  }

  /// What sync's changes have posted so far (at least one must have been).
  func posted(_ fs: DocumentFileSystem) -> [Announcement] {
    fs.announcements.next()?.announcements ?? []
  }

  func make(_ fs: DocumentFileSystem, _ text: String) throws -> UInt64 {
    let (attributes, file) = try fs.create(
      parent: root, name: bytes("doc.txt"), mode: 0o640, flags: O_WRONLY, caller: me)
    _ = try bytes(text).withUnsafeBytes { try fs.write(handle: file.handle, data: $0, offset: 0) }
    fs.release(handle: file.handle)
    return UInt64(attributes.st_ino)
  }

  func incoming(_ store: LocalStore, _ text: String, like inode: UInt64? = nil) throws -> String {
    let (name, fd) = try #require(store.content.createIncomingFile())
    #expect(Glibc.write(fd, text, text.utf8.count) == text.utf8.count)
    if let inode {
      var info = stat()
      #expect(fstatat(store.workingFiles, LocalStore.workingFileName(inode), &info, 0) == 0)
      _ = futimens(fd, [info.st_mtim, info.st_mtim])
    }
    close(fd)
    return name
  }

  @Test func onlyTheRaisingProcessIsTheAnnouncer() throws {
    let (_, fs) = try mounted()
    #expect(fs.isAnnouncer(announcer))
    #expect(!fs.isAnnouncer(announcer + 1))
    #expect(!fs.isAnnouncer(0))
    fs.announcements.close()
    #expect(!fs.isAnnouncer(announcer))
  }

  @Test func newContentIsAnnouncedOnceAndRaisedThroughItsOwnHandle() throws {
    let (store, fs) = try mounted()
    let inode = try make(fs, "old\n")
    let change = RemoteChange.file(
      path: path, incoming: try incoming(store, "new content\n"), executable: false)
    #expect(fs.apply(change, expected: fs.entry(at: path)) != .skipped)
    let posted = posted(fs)
    #expect(posted.map(\.kind) == [.contentChanged])
    let announcement = try #require(posted.first)
    #expect(announcement.inode == inode && announcement.name == bytes("doc.txt"))
    #expect(fs.plan(announcement) == .raise(size: 12))
    // Nothing is open to the raising process but what it announces.
    #expect(throws: Errno.notPermitted) { try fs.announcedOpen(inode: inode) }
    fs.announcements.setCurrent(announcement)
    let handle = try fs.announcedOpen(inode: inode)
    #expect(fs.announcements.isOwnHandle(handle))
    let attributes = try fs.announcedAttributes(inode: inode, handle: handle)
    #expect(attributes.st_size == 12)
    #expect(throws: Errno.notPermitted) { try fs.announcedAttributes(inode: inode, handle: nil) }
    fs.announcements.setCurrent(nil)
    fs.announcements.releaseHandle(handle)
    #expect(!fs.announcements.isOwnHandle(handle))
    // No open file of the file system's own was made, and nothing was noted.
    #expect(fs.hasOpenWriter(at: path) == false)
  }

  @Test func aNewModeWithTheSameContentIsAChmodOnly() throws {
    let (store, fs) = try mounted()
    let inode = try make(fs, "#!/bin/sh\n")
    let change = RemoteChange.file(
      path: path, incoming: try incoming(store, "#!/bin/sh\n", like: inode), executable: true)
    #expect(fs.apply(change, expected: fs.entry(at: path)) != .skipped)
    #expect(posted(fs).map(\.kind) == [.modeChanged(UInt32(S_IFREG) | 0o750)])
  }

  @Test func aNewFileIsCreatedForTheRaisingThreadAndHiddenFromItsLookup() throws {
    let (store, fs) = try mounted()
    let change = RemoteChange.file(
      path: path, incoming: try incoming(store, "new\n"), executable: false)
    guard case .applied(.file(let inode, _, _, _, _)?) = fs.apply(change, expected: nil) else {
      Issue.record("not applied")
      return
    }
    let announcement = try #require(posted(fs).first)
    #expect(announcement.kind == .created(.file) && announcement.inode == inode)
    fs.announcements.setCurrent(announcement)
    guard case .hidden = fs.announcedLookup(parent: root, name: bytes("doc.txt")) else {
      Issue.record("the new name must look new to the raising process")
      return
    }
    let attributes = try fs.announcedEntry(parent: root, name: bytes("doc.txt"))
    #expect(UInt64(attributes.st_ino) == inode)
    #expect(throws: Errno.fileExists) {
      try fs.announcedEntry(parent: root, name: bytes("other.txt"))
    }
    fs.announcements.setCurrent(nil)
    // Anyone else finds it as always.
    #expect(UInt64(try fs.lookup(parent: root, name: bytes("doc.txt"), caller: me).st_ino) == inode)
  }

  @Test func aRemovedNameIsFoundOnceMoreForTheUnlinkThatAnnouncesIt() throws {
    let (_, fs) = try mounted()
    let inode = try make(fs, "doomed\n")
    #expect(fs.apply(.remove(path: path), expected: fs.entry(at: path)) == .applied(nil))
    let announcement = try #require(posted(fs).first)
    #expect(announcement.kind == .removed(.file) && announcement.inode == inode)
    #expect(fs.plan(announcement) == .raise(size: 0))
    fs.announcements.setCurrent(announcement)
    guard case .found(let attributes) = fs.announcedLookup(parent: root, name: bytes("doc.txt"))
    else {
      Issue.record("the removed name must be found by the raising process")
      return
    }
    #expect(UInt64(attributes.st_ino) == inode && attributes.st_nlink == 1)
    try fs.announcedRemoval(parent: root, name: bytes("doc.txt"))
    // A file made at the name in the meantime is never removed by the announcement.
    _ = try make(fs, "made here since\n")
    #expect(throws: Errno.notPermitted) {
      try fs.announcedRemoval(parent: root, name: bytes("doc.txt"))
    }
    fs.announcements.setCurrent(nil)
  }

  @Test func aReaderReadsOnIntoAnAppendButKeepsWhatItOpenedOtherwise() throws {
    let (store, fs) = try mounted()
    fs.readersFollowAppends.store(true, ordering: .relaxed)
    let inode = try make(fs, "first line\n")
    let reader = try fs.open(inode: inode, flags: O_RDONLY, caller: me)
    let appended = RemoteChange.file(
      path: path, incoming: try incoming(store, "first line\nsecond line\n"), executable: false)
    guard
      case .applied(.file(let same, _, _, _, _)?) = fs.apply(
        appended, expected: fs.entry(at: path))
    else {
      Issue.record("not applied")
      return
    }
    #expect(same == inode, "an append keeps the inode that the reader has open")
    let read = try fs.read(handle: reader.handle, offset: 0, count: 100)
    #expect(String(decoding: read, as: UTF8.self) == "first line\nsecond line\n")
    #expect(posted(fs).map(\.kind) == [.contentChanged])
    let rewritten = RemoteChange.file(
      path: path, incoming: try incoming(store, "rewritten entirely\n"), executable: false)
    guard
      case .applied(.file(let other, _, _, _, _)?) = fs.apply(
        rewritten, expected: fs.entry(at: path))
    else {
      Issue.record("not applied")
      return
    }
    #expect(other != inode, "anything but an append gives the path a new inode")
    let kept = try fs.read(handle: reader.handle, offset: 0, count: 100)
    #expect(String(decoding: kept, as: UTF8.self) == "first line\nsecond line\n")
    #expect(posted(fs).map(\.kind) == [.removed(.file), .created(.file)])
    fs.release(handle: reader.handle)
  }

  @Test func whatLandsInAFolderOnlySyncHasShownTheKernelIsNotRaised() throws {
    let (store, fs) = try mounted()
    let folderPath = DocumentPath(components: [bytes("folder")])
    #expect(fs.apply(.directory(path: folderPath), expected: nil) == .applied(.directory))
    let made = try #require(posted(fs).first)
    #expect(made.kind == .created(.directory) && fs.plan(made) == .raise(size: 0))
    fs.announcements.setCurrent(made)
    _ = try fs.announcedEntry(parent: root, name: bytes("folder"))
    fs.announcements.setCurrent(nil)
    let inner = folderPath.appending(bytes("inner.txt"))
    let change = RemoteChange.file(
      path: inner, incoming: try incoming(store, "inside\n"), executable: false)
    #expect(fs.apply(change, expected: nil) != .skipped)
    let created = try #require(posted(fs).first)
    #expect(created.parent == made.inode)
    // The kernel knows the folder only through the raising process's mkdir: nobody watches it.
    #expect(fs.plan(created) == .skip)
    // A watcher that lists the new folder (inotifywait -r does) makes it heard.
    fs.announcements.noteSeen(made.inode, by: 1)
    #expect(fs.plan(created) == .raise(size: 0))
  }
}
