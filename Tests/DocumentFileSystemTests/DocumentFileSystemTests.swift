import DocumentFileSystem
import Glibc
import LocalStore
import SystemPackage
import Testing

import enum MountHarness.ScratchFolder

func temporaryFolder() -> String { ScratchFolder.make("docsync-dfs") }

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Rules of the document file system that the conformance suite cannot see from outside:
/// persistence of inode numbers, lookup counts, and the reserved `.versions` folder.
@Suite struct DocumentFileSystemTests {
  let folder = temporaryFolder()
  let me = Caller(uid: 1000, gid: 1000)
  let root = DocumentFileSystem.rootInode

  func open(creationMask: UInt32 = 0o022) throws -> DocumentFileSystem {
    try DocumentFileSystem(
      store: LocalStore(directory: folder), owner: me, creationMask: creationMask)
  }

  /// A write, truncate or chown clears setuid, and setgid only where the group may execute.
  @Test func clearingSetIDFollowsLinux() {
    #expect(DocumentFileSystem.clearingSetID(UInt32(S_IFREG) | 0o6755) == UInt32(S_IFREG) | 0o755)
    #expect(DocumentFileSystem.clearingSetID(0o4700) == 0o700)
    #expect(DocumentFileSystem.clearingSetID(0o2644) == 0o2644)
    #expect(DocumentFileSystem.clearingSetID(0o1777) == 0o1777)
  }

  /// The store's count of files open for writing decides whether a commit starts the
  /// journal's pages on their way; nothing else shows it, so a count that drifted (a disk write
  /// too many a save, or an `fsync` that waits longer) would go unseen. It follows each
  /// writable open until its first close, or its release when no close came.
  @Test func theStoreCountsFilesOpenForWritingUntilTheirFirstClose() throws {
    let store = try LocalStore(directory: folder)
    let fs = try DocumentFileSystem(store: store, owner: me)
    defer { fs.shutdown() }
    let (attributes, created) = try fs.create(
      parent: root, name: bytes("a"), mode: 0o644, flags: O_WRONLY, caller: me)
    #expect(store.filesOpenForWriting == 1)
    try fs.flush(handle: created.handle)
    #expect(store.filesOpenForWriting == 0)
    // A second close (of a duplicated descriptor) and the release count nothing more.
    try fs.flush(handle: created.handle)
    fs.release(handle: created.handle)
    #expect(store.filesOpenForWriting == 0)

    let inode = UInt64(attributes.st_ino)
    let reader = try fs.open(inode: inode, flags: O_RDONLY, caller: me)
    let writer = try fs.open(inode: inode, flags: O_RDWR, caller: me)
    let truncating = try fs.open(inode: inode, flags: O_WRONLY | O_TRUNC, caller: me)
    #expect(store.filesOpenForWriting == 2)
    fs.release(handle: writer.handle)
    #expect(store.filesOpenForWriting == 1)
    try fs.flush(handle: reader.handle)
    fs.release(handle: reader.handle)
    #expect(store.filesOpenForWriting == 1)
    try fs.flush(handle: truncating.handle)
    fs.release(handle: truncating.handle)
    #expect(store.filesOpenForWriting == 0)
  }

  /// Opens on the mount keep their descriptor only below the ceiling that leaves the daemon
  /// its reserve: past it an open or create is refused with ENFILE, and a refused create
  /// leaves no name behind.
  @Test func opensPastTheDescriptorCeilingAreRefused() throws {
    #expect(DocumentFileSystem.descriptorCeiling(forLimit: 524_288) == 524_160)
    #expect(DocumentFileSystem.descriptorCeiling(forLimit: 300) == 225)
    #expect(DocumentFileSystem.descriptorCeiling(forLimit: Int.max) == Int32.max - 128)
    let kept: UInt64
    do {
      let roomy = try open()
      let (attributes, file) = try roomy.create(
        parent: root, name: bytes("kept"), mode: 0o644, flags: O_WRONLY, caller: me)
      roomy.release(handle: file.handle)
      kept = UInt64(attributes.st_ino)
      roomy.shutdown()
    }
    let full = try DocumentFileSystem(
      store: LocalStore(directory: folder), owner: me, descriptorCeiling: 0)
    defer { full.shutdown() }
    #expect(throws: Errno(rawValue: ENFILE)) {
      try full.open(inode: kept, flags: O_RDONLY, caller: me)
    }
    #expect(throws: Errno(rawValue: ENFILE)) {
      try full.create(
        parent: root, name: bytes("refused"), mode: 0o644, flags: O_WRONLY, caller: me)
    }
    #expect(throws: Errno.noSuchFileOrDirectory) {
      try full.lookup(parent: root, name: bytes("refused"), caller: me)
    }
    #expect(UInt64(try full.lookup(parent: root, name: bytes("kept"), caller: me).st_ino) == kept)
  }

  @Test func treeAndInodeNumbersSurviveReopening() throws {
    var inodes: [String: UInt64] = [:]
    do {
      let fs = try open()
      let folderAttributes = try fs.makeDirectory(
        parent: root, name: bytes("notes"), mode: 0o750, caller: me)
      let (fileAttributes, file) = try fs.create(
        parent: UInt64(folderAttributes.st_ino), name: bytes("plan.md"), mode: 0o640,
        flags: O_WRONLY,
        caller: me)
      _ = try [UInt8]("hello".utf8).withUnsafeBytes {
        try fs.write(handle: file.handle, data: $0, offset: 0)
      }
      try fs.synchronize(handle: file.handle, dataOnly: false)
      fs.release(handle: file.handle)
      let link = try fs.symlink(
        target: bytes("notes/plan.md"), parent: root, name: bytes("latest"), caller: me)
      try [UInt8]("v".utf8).withUnsafeBytes {
        try fs.setExtendedAttribute(
          inode: UInt64(fileAttributes.st_ino), name: bytes("user.tag"), value: $0, flags: 0,
          caller: me)
      }
      inodes = [
        "notes": UInt64(folderAttributes.st_ino), "plan": UInt64(fileAttributes.st_ino),
        "link": UInt64(link.st_ino),
      ]
      fs.shutdown()
    }
    let fs = try open()
    let notes = try fs.lookup(parent: root, name: bytes("notes"), caller: me)
    #expect(UInt64(notes.st_ino) == inodes["notes"])
    #expect(notes.st_mode == UInt32(S_IFDIR) | 0o750)
    #expect(notes.st_uid == 1000)
    let plan = try fs.lookup(parent: UInt64(notes.st_ino), name: bytes("plan.md"), caller: me)
    #expect(UInt64(plan.st_ino) == inodes["plan"])
    #expect(plan.st_size == 5)
    #expect(plan.st_mode == UInt32(S_IFREG) | 0o640)
    #expect(
      try fs.extendedAttribute(inode: UInt64(plan.st_ino), name: bytes("user.tag"), caller: me)
        == bytes("v"))
    let link = try fs.lookup(parent: root, name: bytes("latest"), caller: me)
    #expect(UInt64(link.st_ino) == inodes["link"])
    #expect(try fs.readLink(inode: UInt64(link.st_ino)) == bytes("notes/plan.md"))
    let file = try fs.open(inode: UInt64(plan.st_ino), flags: O_RDONLY, caller: me)
    #expect(try fs.read(handle: file.handle, offset: 0, count: 100) == bytes("hello"))
    fs.release(handle: file.handle)
    // New inodes never reuse a number, so a kernel or git that remembers one is never confused.
    let fresh = try fs.makeDirectory(parent: root, name: bytes("fresh"), mode: 0o755, caller: me)
    #expect(!inodes.values.contains(UInt64(fresh.st_ino)))
  }

  /// The store's inode counter is written once per reservation, not with every create, and
  /// still no number comes back: not the newest one deleted before a restart, nor any other.
  @Test func inodeNumbersAreReservedAheadAndNeverComeBack() throws {
    func makeFiles(_ fs: DocumentFileSystem, _ prefix: String, count: Int) throws -> [UInt64] {
      try (0..<count).map { index in
        let (attributes, file) = try fs.create(
          parent: root, name: bytes("\(prefix)\(index)"), mode: 0o600, flags: O_WRONLY,
          caller: me)
        fs.release(handle: file.handle)
        fs.forget(inode: UInt64(attributes.st_ino), count: 1)
        return UInt64(attributes.st_ino)
      }
    }
    var seen: Set<UInt64> = []
    let first: UInt64
    do {
      let fs = try open()
      let numbers = try makeFiles(fs, "a", count: 300)
      first = numbers[0]
      seen.formUnion(numbers)
      // The newest number's inode is gone before the restart: only the counter remembers it.
      try fs.unlink(parent: root, name: bytes("a299"), caller: me)
      fs.shutdown()
    }
    let reserved = try LocalStore(directory: folder).load().nextInode
    // Written once, with the root, before the first number went out; not by the 300 creates.
    #expect(reserved == first + DocumentFileSystem.inodeReservation)
    let fs = try open()
    let after = try makeFiles(fs, "b", count: 3)
    #expect(seen.isDisjoint(with: after))
    #expect(after.allSatisfy { $0 >= reserved })
    #expect(after == after.sorted())
  }

  @Test func anUnlinkedFileLivesUntilClosedAndForgotten() throws {
    let fs = try open()
    let (attributes, file) = try fs.create(
      parent: root, name: bytes("doomed"), mode: 0o600, flags: O_RDWR, caller: me)
    let inode = UInt64(attributes.st_ino)
    _ = try [UInt8]("still here".utf8).withUnsafeBytes {
      try fs.write(handle: file.handle, data: $0, offset: 0)
    }
    try fs.unlink(parent: root, name: bytes("doomed"), caller: me)
    #expect(throws: Errno.noSuchFileOrDirectory) {
      try fs.lookup(parent: root, name: bytes("doomed"), caller: me)
    }
    #expect(try fs.read(handle: file.handle, offset: 0, count: 64) == bytes("still here"))
    #expect(try fs.attributes(inode: inode).st_nlink == 0)
    let workingFile = folder + "/files/" + LocalStore.workingFileName(inode)
    fs.release(handle: file.handle)
    #expect(Glibc.access(workingFile, F_OK) == 0, "the kernel still holds a lookup")
    fs.forget(inode: inode, count: 1)
    #expect(Glibc.access(workingFile, F_OK) == 0, "removed after the commit that drops the inode")
    try fs.synchronizeDirectory(inode: root)
    #expect(Glibc.access(workingFile, F_OK) != 0)
    #expect(throws: Errno.noSuchFileOrDirectory) { try fs.attributes(inode: inode) }
  }

  @Test func versionsIsAReservedReadOnlyFolderAtTheRootOnly() throws {
    let fs = try open()
    let versions = try fs.lookup(parent: root, name: DocumentFileSystem.versionsName, caller: me)
    #expect(UInt64(versions.st_ino) == DocumentFileSystem.versionsInode)
    // Writable by its owner so that the kernel lets `rm` and `mv` out of it; the operations
    // themselves refuse everything else.
    #expect(versions.st_mode == UInt32(S_IFDIR) | 0o755)
    #expect(versions.st_uid == me.uid)
    #expect(throws: Errno.fileExists) {
      try fs.makeDirectory(
        parent: root, name: DocumentFileSystem.versionsName, mode: 0o755, caller: me)
    }
    #expect(throws: Errno.fileExists) {
      try fs.create(
        parent: root, name: DocumentFileSystem.versionsName, mode: 0o644, flags: O_WRONLY,
        caller: me)
    }
    #expect(throws: Errno.readOnlyFileSystem) {
      try fs.create(
        parent: DocumentFileSystem.versionsInode, name: bytes("x"), mode: 0o644, flags: O_WRONLY,
        caller: me)
    }
    _ = try fs.create(parent: root, name: bytes("doc"), mode: 0o644, flags: O_WRONLY, caller: me)
    #expect(throws: Errno.readOnlyFileSystem) {
      try fs.rename(
        parent: root, name: bytes("doc"), newParent: root, newName: DocumentFileSystem.versionsName,
        options: [], caller: me)
    }
    #expect(throws: Errno.readOnlyFileSystem) {
      try fs.rename(
        parent: root, name: bytes("doc"), newParent: DocumentFileSystem.versionsInode,
        newName: bytes("doc"), options: [], caller: me)
    }
    #expect(throws: Errno.readOnlyFileSystem) {
      try fs.removeDirectory(parent: root, name: DocumentFileSystem.versionsName, caller: me)
    }
    // Elsewhere it is an ordinary name.
    let sub = try fs.makeDirectory(parent: root, name: bytes("sub"), mode: 0o755, caller: me)
    _ = try fs.makeDirectory(
      parent: UInt64(sub.st_ino), name: DocumentFileSystem.versionsName, mode: 0o755, caller: me)

    #expect(listing(fs, root).contains(DocumentFileSystem.versionsName))
    #expect(listing(fs, DocumentFileSystem.versionsInode) == [bytes("."), bytes("..")])
  }

  @Test func historyIsAReservedHiddenReadOnlyFolderAtTheRootOnly() throws {
    let fs = try open()
    let history = try fs.lookup(parent: root, name: DocumentFileSystem.historyName, caller: me)
    #expect(UInt64(history.st_ino) == DocumentFileSystem.historyInode)
    // Nobody writes it, its owner included: earlier versions go only by retention.
    #expect(history.st_mode == UInt32(S_IFDIR) | 0o555)
    #expect(throws: Errno.fileExists) {
      try fs.makeDirectory(
        parent: root, name: DocumentFileSystem.historyName, mode: 0o755, caller: me)
    }
    #expect(throws: Errno.fileExists) {
      try fs.create(
        parent: root, name: DocumentFileSystem.historyName, mode: 0o644, flags: O_WRONLY,
        caller: me)
    }
    #expect(throws: Errno.readOnlyFileSystem) {
      try fs.create(
        parent: DocumentFileSystem.historyInode, name: bytes("x"), mode: 0o644, flags: O_WRONLY,
        caller: me)
    }
    _ = try fs.create(parent: root, name: bytes("doc"), mode: 0o644, flags: O_WRONLY, caller: me)
    #expect(throws: Errno.readOnlyFileSystem) {
      try fs.rename(
        parent: root, name: bytes("doc"), newParent: root, newName: DocumentFileSystem.historyName,
        options: [], caller: me)
    }
    #expect(throws: Errno.readOnlyFileSystem) {
      try fs.removeDirectory(parent: root, name: DocumentFileSystem.historyName, caller: me)
    }
    #expect(throws: Errno.readOnlyFileSystem) {
      try fs.unlink(parent: DocumentFileSystem.historyInode, name: bytes("doc"), caller: me)
    }
    // Hidden from the root's listing; elsewhere an ordinary name.
    #expect(!listing(fs, root).contains(DocumentFileSystem.historyName))
    #expect(listing(fs, DocumentFileSystem.historyInode) == [bytes("."), bytes("..")])
    let sub = try fs.makeDirectory(parent: root, name: bytes("sub"), mode: 0o755, caller: me)
    _ = try fs.makeDirectory(
      parent: UInt64(sub.st_ino), name: DocumentFileSystem.historyName, mode: 0o755, caller: me)
  }

  @Test func whatDocsyncMakesFollowsTheMountsUmask() throws {
    let fs = try open(creationMask: 0o077)
    #expect(try fs.attributes(inode: root).st_mode == UInt32(S_IFDIR) | 0o700)
    let versions = try fs.lookup(parent: root, name: DocumentFileSystem.versionsName, caller: me)
    #expect(versions.st_mode == UInt32(S_IFDIR) | 0o700)
    // The owner may remove entries of `.versions` (write on the folder) but write nothing in it.
    try fs.access(inode: DocumentFileSystem.versionsInode, mask: W_OK | X_OK, caller: me)
    let stranger = Caller(uid: 2000, gid: 2000)
    #expect(throws: Errno.permissionDenied) {
      try fs.access(inode: DocumentFileSystem.versionsInode, mask: R_OK, caller: stranger)
    }
  }

  @Test func readdirplusCountsALookupOnlyForEntriesTheKernelTook() throws {
    let fs = try open()
    var inodes: [UInt64] = []
    for index in 0..<3 {
      let attributes = try fs.makeDirectory(
        parent: root, name: bytes("d\(index)"), mode: 0o755, caller: me)
      inodes.append(UInt64(attributes.st_ino))
      fs.forget(inode: UInt64(attributes.st_ino), count: 1)
    }
    let handle = try fs.openDirectory(inode: root, caller: me)
    var taken: [UInt64] = []
    // ".", "..", ".versions", then the three folders: take the first folder only.
    try fs.readDirectory(inode: root, handle: handle, offset: 0, plus: true) { entry in
      if inodes.contains(entry.inode) {
        if !taken.isEmpty { return false }
        taken.append(entry.inode)
      }
      return true
    }
    fs.releaseDirectory(handle: handle)
    #expect(taken.count == 1)
    // Removing every folder: only the taken one must stay alive until its forget.
    for index in 0..<3 {
      try fs.removeDirectory(parent: root, name: bytes("d\(index)"), caller: me)
    }
    #expect(throws: Never.self) { try fs.attributes(inode: taken[0]) }
    for inode in inodes where inode != taken[0] {
      #expect(throws: Errno.noSuchFileOrDirectory) { try fs.attributes(inode: inode) }
    }
    fs.forget(inode: taken[0], count: 1)
    #expect(throws: Errno.noSuchFileOrDirectory) { try fs.attributes(inode: taken[0]) }
  }

  @Test func leftoversOfACrashAreCleanedAtLoad() throws {
    let store = try LocalStore(directory: folder)
    try store.apply([
      .putInode(
        InodeRecord(
          inode: 500, mode: 0o100644, uid: 0, gid: 0, rdev: 0, accessTime: 0, modificationTime: 0,
          changeTime: 0, target: nil))
    ])
    // 501 is the next inode, whose working file the store makes ahead of the create that
    // will take it (empty); 900 is past what it makes.
    let strays = [501, 900].map { folder + "/files/" + LocalStore.workingFileName($0) }
    for stray in strays {
      let fd = Glibc.open(stray, O_CREAT | O_WRONLY, 0o600)
      #expect(Glibc.write(fd, "stale", 5) == 5)
      close(fd)
    }
    let fs = try DocumentFileSystem(store: store, owner: me)
    #expect(throws: Errno.noSuchFileOrDirectory) { try fs.attributes(inode: 500) }
    var info = stat()
    #expect(stat(strays[0], &info) != 0 || info.st_size == 0, "the stray's content is gone")
    #expect(Glibc.access(strays[1], F_OK) != 0)
  }

  @Test func aFolderCannotMoveIntoItself() throws {
    let fs = try open()
    let a = try fs.makeDirectory(parent: root, name: bytes("a"), mode: 0o755, caller: me)
    let b = try fs.makeDirectory(
      parent: UInt64(a.st_ino), name: bytes("b"), mode: 0o755, caller: me)
    #expect(throws: Errno.invalidArgument) {
      try fs.rename(
        parent: root, name: bytes("a"), newParent: UInt64(b.st_ino), newName: bytes("a"),
        options: [], caller: me)
    }
    #expect(throws: Errno.invalidArgument) {
      try fs.rename(
        parent: root, name: bytes("a"), newParent: UInt64(a.st_ino), newName: bytes("x"),
        options: [], caller: me)
    }
  }

  @Test func newNodesBelongToTheCallerAndSetgidFoldersPassTheirGroupOn() throws {
    let fs = try open()
    let other = Caller(uid: 2000, gid: 3000)
    let shared = try fs.makeDirectory(parent: root, name: bytes("shared"), mode: 0o2775, caller: me)
    #expect(shared.st_uid == 1000 && shared.st_gid == 1000)
    let (file, handle) = try fs.create(
      parent: UInt64(shared.st_ino), name: bytes("f"), mode: 0o644, flags: O_WRONLY, caller: other)
    fs.release(handle: handle.handle)
    #expect(file.st_uid == 2000)
    #expect(file.st_gid == 1000)
    let sub = try fs.makeDirectory(
      parent: UInt64(shared.st_ino), name: bytes("sub"), mode: 0o755, caller: other)
    #expect(sub.st_mode & UInt32(S_ISGID) != 0)
  }

  func listing(_ fs: DocumentFileSystem, _ inode: UInt64) -> [[UInt8]] {
    guard let handle = try? fs.openDirectory(inode: inode, caller: me) else { return [] }
    defer { fs.releaseDirectory(handle: handle) }
    var names: [[UInt8]] = []
    try? fs.readDirectory(inode: inode, handle: handle, offset: 0, plus: false) { entry in
      names.append(entry.name)
      return true
    }
    return names
  }
}
