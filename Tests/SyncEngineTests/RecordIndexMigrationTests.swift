import DocumentFileSystem
import DocumentModel
import Foundation
import Hub
import LocalStore
import SyncEngine
import Testing

import func MountHarness.run

/// A state database made before records stayed on disk (schema v4) is indexed once at the next
/// start: the same current versions, conflicts, `.history` and clock as before.
@Suite("record index migration")
struct RecordIndexMigrationTests {
  @Test func aStateFromBeforeSchemaV5IsIndexedAtTheNextStart() async throws {
    let library = Library()
    var a = try library.device("a")
    let b = try library.device("b")
    for save in 1...3 {
      try a.write("plan.md", "save \(save)\n")
      try await a.sync()
    }
    try await b.sync()
    // Concurrent edits: a conflict, whose merge base is read from history.
    a.engine.pause()
    try a.write("plan.md", "a's edit\n")
    try b.write("plan.md", "b's edit\n")
    try await b.sync()
    a.engine.resume()
    try await a.sync()
    let conflicts = a.engine.conflicts()
    #expect(conflicts.count == 1)
    let history = a.engine.versionsOverTime(of: DocumentPath("plan.md"))
    #expect(history.versions.count == 5)
    await a.stop()
    await b.stop()

    // What the v5 migration leaves of a v4 database: its rows, with no index yet.
    let state = library.folder + "/a/state.sqlite"
    let downgrade = try run([
      "/usr/bin/sqlite3", state,
      """
      UPDATE versions SET path = NULL, document = 0, hash = NULL;
      DELETE FROM version_parents; DELETE FROM heads; DELETE FROM history_paths;
      DELETE FROM sync_meta WHERE key = 'records_indexed';
      """,
    ])
    #expect(downgrade.status == 0, "\(downgrade)")
    #expect(try !LocalStore(directory: library.folder + "/a").recordsIndexed())

    a = try library.device("a")
    #expect(try a.store.recordsIndexed())
    #expect(a.engine.conflicts() == conflicts)
    let again = a.engine.versionsOverTime(of: DocumentPath("plan.md"))
    #expect(again.versions == history.versions)
    #expect(again.heads == history.heads)
    #expect(again.earlier == history.earlier)
    #expect(a.engine.hasHistoryFolder(DocumentPath("plan.md")))
    #expect(a.engine.historyListing(.root).folders == [Array("plan.md".utf8)])
    // A new save follows what the path showed, and is later than every version before it.
    try a.write("plan.md", "after the update\n")
    try await a.sync()
    let after = a.engine.versionsOverTime(of: DocumentPath("plan.md"))
    let newest = try #require(after.versions.last)
    #expect(try a.read("plan.md") == "after the update\n")
    #expect(after.heads.contains(newest.id))
    #expect(after.versions.count == 6)
    await a.stop()
  }
}
