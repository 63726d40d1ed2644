import DocumentFileSystem
import DocumentModel
import Glibc
import LocalStore
import SyncEngine
import Testing

/// How a remote file version takes a path: only a rename under the tree's lock, and never a
/// rewrite of a file that is open.
@Suite struct RemoteApplyTests {
  let folder = temporaryFolder()
  let me = Caller(uid: getuid(), gid: getgid())
  let root = DocumentFileSystem.rootInode
  let path = DocumentPath(components: [bytes("doc.txt")])

  func make(_ fs: DocumentFileSystem, _ text: String) throws -> UInt64 {
    let (attributes, file) = try fs.create(
      parent: root, name: bytes("doc.txt"), mode: 0o640, flags: O_WRONLY, caller: me)
    _ = try bytes(text).withUnsafeBytes { try fs.write(handle: file.handle, data: $0, offset: 0) }
    fs.release(handle: file.handle)
    // As the kernel does once it no longer needs the name's inode.
    fs.forget(inode: UInt64(attributes.st_ino), count: 1)
    return UInt64(attributes.st_ino)
  }

  func incoming(_ store: LocalStore, _ text: String) throws -> String {
    let (name, fd) = try #require(store.content.createIncomingFile())
    #expect(Glibc.write(fd, text, text.utf8.count) == text.utf8.count)
    close(fd)
    return name
  }

  func read(_ fs: DocumentFileSystem, _ handle: UInt64) throws -> String {
    String(decoding: try fs.read(handle: handle, offset: 0, count: 100), as: UTF8.self)
  }

  @Test func aClosedFileKeepsItsInodeAndGetsTheNewContent() throws {
    let store = try LocalStore(directory: folder)
    let fs = try DocumentFileSystem(store: store, owner: me)
    let inode = try make(fs, "old\n")
    let change = RemoteChange.file(
      path: path, incoming: try incoming(store, "new content\n"), executable: false)
    guard
      case .applied(.file(let applied, _, _, _, _)?) = fs.apply(
        change, expected: fs.entry(at: path))
    else {
      Issue.record("not applied")
      return
    }
    #expect(applied == inode)
    let file = try fs.open(inode: inode, flags: O_RDONLY, caller: me)
    #expect(try read(fs, file.handle) == "new content\n")
    fs.release(handle: file.handle)
  }

  @Test func anOpenFileIsNeverRewrittenItsPathGetsANewInode() throws {
    let store = try LocalStore(directory: folder)
    let fs = try DocumentFileSystem(store: store, owner: me)
    let inode = try make(fs, "old\n")
    let reader = try fs.open(inode: inode, flags: O_RDONLY, caller: me)
    let change = RemoteChange.file(
      path: path, incoming: try incoming(store, "new content\n"), executable: false)
    guard
      case .applied(.file(let applied, _, _, _, _)?) = fs.apply(
        change, expected: fs.entry(at: path))
    else {
      Issue.record("not applied")
      return
    }
    #expect(applied != inode)
    #expect(try read(fs, reader.handle) == "old\n", "the reader keeps what it opened")
    let later = try fs.open(inode: applied, flags: O_RDONLY, caller: me)
    #expect(try read(fs, later.handle) == "new content\n")
    #expect(try fs.attributes(inode: applied).st_mode & 0o777 == 0o640, "mode bits stay local")
    fs.release(handle: later.handle)
    fs.release(handle: reader.handle)
    // The old inode's working file goes with its last close, once that is committed.
    try store.flush()
    #expect(faccessat(store.workingFiles, LocalStore.workingFileName(inode), F_OK, 0) != 0)
  }

  @Test func aChangeOverSomethingElseIsSkippedAndLeavesNoFile() throws {
    let store = try LocalStore(directory: folder)
    let fs = try DocumentFileSystem(store: store, owner: me)
    let expected = fs.entry(at: path)
    _ = try make(fs, "made meanwhile\n")
    let name = try incoming(store, "new content\n")
    let change = RemoteChange.file(path: path, incoming: name, executable: false)
    #expect(fs.apply(change, expected: expected) == .skipped)
    store.content.removeIncomingFile(name)
    #expect(faccessat(store.workingFiles, name, F_OK, 0) != 0)
  }
}
