import Foundation
import MountHarness
import Testing

/// What the engine logs while the daemon starts reaches the log: before, the daemon's stderr
/// was the pipe its starter read until "ready", and the starter dropped every line that was
/// not a warning.
@Suite("The daemon's start-up log")
struct StartupLogTests {
  @Test(
    "A stored record the engine ignores at start is named in STATE/docsync.log",
    .needs("sqlite3"), .docsyncOnly)
  func anIgnoredStoredRecordIsLogged() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      try write(a.path("doc.txt"), "kept\n")
      try a.sync()
      try a.unmount()
      // A stored record whose payload fails its check, as an earlier docsync stored it (no
      // index columns): the engine indexes it and ignores it as it loads its state, before the
      // mount is ready.
      let id = String(repeating: "ab", count: 32)
      try check([
        "sqlite3", "\(a.state)/state.sqlite",
        "INSERT INTO versions (id, payload) VALUES (X'\(id)', X'01')",
      ])
      try a.mount()
      #expect(
        a.log().contains("a stored version record fails its check and is ignored"),
        "\(a.logTail())")
      #expect(try read(a.path("doc.txt")) == "kept\n")
    }
  }
}
