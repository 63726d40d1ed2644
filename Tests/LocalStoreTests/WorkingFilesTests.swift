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
    let (incoming, fd) = try #require(store.createIncomingFile())
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
}
