import Glibc
import LocalStore
import Testing

/// Working files on their way in, and the intents that cover a remote change while it lands.
@Suite struct WorkingFilesTests {
  let folder = makeStateFolder()

  @Test func intentsSurviveReopeningUntilEnded() throws {
    let intent = ApplyIntent(
      path: Array("notes/plan.md".utf8), versionID: [UInt8](repeating: 1, count: 32),
      contentHash: [UInt8](repeating: 2, count: 32))
    do {
      let store = try LocalStore(directory: folder)
      try store.applySync([.beginApply(intent)])
    }
    let store = try LocalStore(directory: folder)
    #expect(try store.loadSync().intents == [intent])
    try store.applySync([.endApply(path: intent.path)])
    #expect(try store.loadSync().intents.isEmpty)
  }

  @Test func incomingFilesAndOldSyncCopiesAreGoneAfterARestart() throws {
    let store = try LocalStore(directory: folder)
    let (incoming, fd) = try #require(store.content.createIncomingFile())
    #expect(incoming.hasPrefix(LocalStore.incomingFolder + "/") && incoming.hasSuffix(".sync"))
    #expect(Glibc.write(fd, "new", 3) == 3)
    close(fd)
    // What an earlier version left beside a working file when it crashed mid-copy.
    let working = LocalStore.workingFileName(42)
    for name in [working, working + ".sync"] {
      let file = openat(store.workingFiles, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
      #expect(file >= 0)
      close(file)
    }
    store.syncFolders(of: [incoming, working])
    store.removeIncomingLeftovers()
    #expect(faccessat(store.workingFiles, incoming, F_OK, 0) != 0)
    #expect(faccessat(store.workingFiles, working + ".sync", F_OK, 0) != 0)
    #expect(faccessat(store.workingFiles, working, F_OK, 0) == 0, "working files stay")
  }

  @Test func preparedWorkingFilesAreEmptyOpenAndNamedForTheirInode() throws {
    let store = try LocalStore(directory: folder)
    store.prepareWorkingFiles(from: 100)
    // The pool's thread makes them in order: once 104 is there, 100–103 are ready.
    for _ in 0..<1000
    where faccessat(store.workingFiles, LocalStore.workingFileName(104), F_OK, 0) != 0 {
      usleep(1000)
    }
    let fd = try #require(store.takePreparedWorkingFile(100))
    defer { close(fd) }
    var opened = stat()
    var named = stat()
    #expect(fstat(fd, &opened) == 0)
    #expect(fstatat(store.workingFiles, LocalStore.workingFileName(100), &named, 0) == 0)
    #expect(opened.st_ino == named.st_ino && opened.st_size == 0)
    #expect(opened.st_mode & 0o777 == 0o600)
    #expect(Glibc.write(fd, "new", 3) == 3, "open for writing")
    // 101 and 102 went to something else (a folder, a file sync renamed in): let go, and
    // their names are left alone.
    let later = try #require(store.takePreparedWorkingFile(103))
    close(later)
    #expect(store.takePreparedWorkingFile(101) == nil)
    #expect(faccessat(store.workingFiles, LocalStore.workingFileName(101), F_OK, 0) == 0)
    #expect(store.takePreparedWorkingFile(5) == nil, "a number below the pool's is never made")
  }

  @Test func thePoolNeverOpensAFileItDidNotMake() throws {
    let store = try LocalStore(directory: folder)
    // A working file that exists already (a create that did not wait for the pool).
    let name = LocalStore.workingFileName(200)
    let existing = openat(store.workingFiles, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    #expect(Glibc.write(existing, "mine", 4) == 4)
    close(existing)
    store.prepareWorkingFiles(from: 200)
    for _ in 0..<1000
    where faccessat(store.workingFiles, LocalStore.workingFileName(202), F_OK, 0) != 0 {
      usleep(1000)
    }
    #expect(store.takePreparedWorkingFile(200) == nil)
    var info = stat()
    #expect(fstatat(store.workingFiles, name, &info, 0) == 0 && info.st_size == 4)
  }
}
