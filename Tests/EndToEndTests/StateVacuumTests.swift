import Foundation
import MountHarness
import Testing

/// No full VACUUM on a mount's path (issue 16): a state database made before retention keeps
/// auto_vacuum off while mounted, and is converted as its mount stops.
@Suite("State database vacuum mode")
struct StateVacuumTests {
  @Test(
    "an old state database is converted at unmount, not while mounted", .needs("sqlite3"),
    .docsyncOnly)
  func anOldStateDatabaseIsConvertedAtUnmount() throws {
    try Library.with(programs: ["sqlite3"]) { library in
      let a = try library.device("laptop")
      try write(a.path("plan.md"), "the plan\n")
      try a.sync()
      let database = a.state + "/state.sqlite"
      func mode() throws -> String {
        try check(a.asOwner(["sqlite3", database, "PRAGMA auto_vacuum"]), env: a.environment)
          .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
      }
      try a.unmount()
      #expect(try mode() == "2", "a new state database is incremental from its creation")
      // As an earlier docsync made it.
      _ = try check(
        a.asOwner(["sqlite3", database, "PRAGMA auto_vacuum = NONE; VACUUM;"]),
        env: a.environment)
      #expect(try mode() == "0")
      try a.mount()
      try write(a.path("plan.md"), "the plan, edited\n")
      try a.sync()
      _ = try check(
        a.asOwner([try MountFixture.docsyncBinary(), "prune", a.mountPoint]), env: a.environment)
      // A running mount keeps its database to itself; a crash skips the conversion at
      // unmount and shows what the mount itself committed.
      try a.crash()
      #expect(try mode() == "0", "converted while mounted")
      try a.mount()
      #expect(try read(a.path("plan.md")) == "the plan, edited\n")
      try a.unmount()
      #expect(try mode() == "2", "\(a.logTail())")
      try a.mount()
      #expect(try read(a.path("plan.md")) == "the plan, edited\n")
    }
  }
}
