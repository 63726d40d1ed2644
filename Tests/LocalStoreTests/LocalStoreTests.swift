import Foundation
import GRDB
import Glibc
import Testing

import enum MountHarness.ScratchFolder
import func MountHarness.damageRootPage
import func MountHarness.run

@testable import LocalStore

/// A fresh state folder per test, as GRDB's own tests make a fresh database per test.
func makeStateFolder() -> String { ScratchFolder.make("docsync-store") }

/// What the next mount would find if the store's process died now: the state database and
/// its journal copied to a folder of their own and opened there (a running store keeps its
/// database to itself). The journal goes first: a checkpoint between the copies then only
/// brings the database up to what the copied journal holds.
func openCrashCopy(of folder: String) throws -> LocalStore {
  let copy = makeStateFolder()
  for suffix in ["-wal", ""] {
    let source = folder + "/state.sqlite" + suffix
    guard FileManager.default.fileExists(atPath: source) else { continue }
    try FileManager.default.copyItem(atPath: source, toPath: copy + "/state.sqlite" + suffix)
  }
  return try LocalStore(directory: copy)
}

@Suite struct LocalStoreTests {
  let folder = makeStateFolder()

  @Test func changesSurviveReopening() throws {
    let record = InodeRecord(
      inode: 20, mode: 0o100644, uid: 1000, gid: 1001, rdev: 0, accessTime: 1, modificationTime: 2,
      changeTime: 3, target: nil)
    let link = InodeRecord(
      inode: 21, mode: 0o120777, uid: 0, gid: 0, rdev: 0, accessTime: 4, modificationTime: 5,
      changeTime: 6, target: Array("tar\u{0}get".utf8))
    let nfc: [UInt8] = [0xC3, 0xA9]
    let nfd: [UInt8] = [0x65, 0xCC, 0x81]
    do {
      let store = try LocalStore(directory: folder)
      try store.apply([
        .putInode(record), .putInode(link),
        .putEntry(EntryRecord(parent: 1, name: nfc, inode: 20)),
        .putEntry(EntryRecord(parent: 1, name: nfd, inode: 21)),
        .putExtendedAttribute(
          ExtendedAttributeRecord(inode: 20, name: Array("user.a".utf8), value: [0, 1, 2])),
        .setNextInode(22),
      ])
    }
    let snapshot = try LocalStore(directory: folder).load()
    #expect(Set(snapshot.inodes.map(\.inode)) == [20, 21])
    #expect(snapshot.inodes.first { $0.inode == 20 } == record)
    #expect(snapshot.inodes.first { $0.inode == 21 } == link)
    #expect(snapshot.entries.count == 2, "NFC and NFD names are two entries")
    #expect(snapshot.entries.first { $0.name == nfc }?.inode == 20)
    #expect(snapshot.entries.first { $0.name == nfd }?.inode == 21)
    #expect(
      snapshot.extendedAttributes == [
        ExtendedAttributeRecord(inode: 20, name: Array("user.a".utf8), value: [0, 1, 2])
      ])
    #expect(snapshot.nextInode == 22)
  }

  @Test func deletingAnInodeDeletesItsAttributes() throws {
    let store = try LocalStore(directory: folder)
    let record = InodeRecord(
      inode: 30, mode: 0o100600, uid: 0, gid: 0, rdev: 0, accessTime: 0, modificationTime: 0,
      changeTime: 0, target: nil)
    try store.apply([
      .putInode(record),
      .putExtendedAttribute(
        ExtendedAttributeRecord(inode: 30, name: Array("user.x".utf8), value: [1])),
    ])
    try store.apply([.deleteInode(30)])
    let snapshot = try store.load()
    #expect(snapshot.inodes.isEmpty)
    #expect(snapshot.extendedAttributes.isEmpty)
  }

  @Test func aStateFromBeforeStepEightPullsEveryRecordOnceMore() throws {
    let database = folder + "/state.sqlite"
    do {
      let store = try LocalStore(directory: folder)
      try store.applySync([.setMetadata(key: "cursor", value: Array("42".utf8))])
      store.shutdown()
    }
    // Kept while the step is applied: a cursor is not dropped at every open.
    #expect(try LocalStore(directory: folder).loadSync().metadata["cursor"] == Array("42".utf8))
    // A state an earlier docsync left: the step has not run on it.
    let undone = try sqlite3(database, "DELETE FROM grdb_migrations WHERE identifier LIKE 'v8:%'")
    #expect(undone.status == 0, "\(undone.output)")
    let store = try LocalStore(directory: folder)
    #expect(try store.loadSync().metadata["cursor"] == nil)
  }

  @Test func theStoreKeepsItsDatabaseToItselfUntilItCloses() throws {
    let database = folder + "/state.sqlite"
    let record = InodeRecord(
      inode: 40, mode: 0o100644, uid: 0, gid: 0, rdev: 0, accessTime: 0, modificationTime: 0,
      changeTime: 0, target: nil)
    do {
      let store = try LocalStore(directory: folder)
      try store.apply([.putInode(record), .setNextInode(41)])
      #expect(
        !FileManager.default.fileExists(atPath: database + "-shm"),
        "the journal's index is kept in the store's memory, not in a shared file")
      let reader = try sqlite3(database, "SELECT ino FROM inodes")
      #expect(reader.status != 0, "another opener read a database the store holds")
      #expect(reader.output.contains("locked"), "\(reader.output)")
      // Closed as a mount's end closes it. Left to `deinit`, the close waits for the last
      // reference, which one of the store's own threads may hold a moment longer under load
      // (the full suite once found the database still locked here).
      store.shutdown()
    }
    let reader = try sqlite3(database, "SELECT ino FROM inodes")
    #expect(reader.status == 0, "\(reader.output)")
    #expect(reader.output == "40\n")
  }

  /// Runs `sqlite3 DATABASE SQL`: its exit status and what it wrote, error output included.
  private func sqlite3(_ database: String, _ sql: String) throws -> (status: Int32, output: String)
  {
    // posix_spawn, not Foundation's Process, whose run() in Swift 6.3.1 over-reads a `dirent`
    // and can crash the test run (swift-corelibs-foundation PR #5472).
    let result = try run(["/usr/bin/sqlite3", database, sql])
    return (result.status, result.stdout + result.stderr)
  }

  @Test func workingFilesAreSpreadOverShards() {
    #expect(LocalStore.workingFileName(0x1234) == "34/4660")
    #expect(LocalStore.workingFileName(16) == "10/16")
  }

  @Test func anUnusableFolderIsReportedWithItsPath() throws {
    let file = folder + "/plain-file"
    let fd = open(file, O_CREAT | O_WRONLY, 0o600)
    close(fd)
    #expect {
      _ = try LocalStore(directory: file + "/state")
    } throws: { error in
      "\(error)".contains(file)
    }
  }
}

/// Pruned space comes back without a full VACUUM on the mount's path: a new state database is
/// incremental from its creation; an old one is converted only when asked, as a mount stops.
/// A full disk is told apart from other failures of the state database, so that the mount can
/// answer ENOSPC (`mkdir: No space left on device`), which says what to do, rather than EIO.
@Suite struct LocalStoreErrorTests {
  @Test func aFullDiskIsToldApart() {
    let full = LocalStoreError(DatabaseError(resultCode: .SQLITE_FULL, message: "disk is full"))
    guard case .full(let reason) = full else {
      Issue.record("not .full: \(full)")
      return
    }
    #expect(reason.contains("disk is full"))
    let other = LocalStoreError(DatabaseError(resultCode: .SQLITE_IOERR, message: "disk I/O"))
    guard case .failed = other else {
      Issue.record("not .failed: \(other)")
      return
    }
    #expect(full.description.hasPrefix("local store failed: "))
  }
}

@Suite struct StateSpaceTests {
  @Test func aNewStateDatabaseNeedsNoConversion() throws {
    let store = try LocalStore(directory: makeStateFolder())
    try store.reclaimSpace()
    #expect(try !store.convertToIncrementalVacuum())
  }

  @Test func anOldStateDatabaseIsConvertedOnlyWhenAsked() throws {
    let folder = makeStateFolder()
    // A state database as an earlier docsync made it: auto_vacuum off, a table in it.
    let made = try run(["/usr/bin/sqlite3", folder + "/state.sqlite", "CREATE TABLE earlier (x)"])
    #expect(made.status == 0, "\(made)")
    let store = try LocalStore(directory: folder)
    try store.reclaimSpace()
    #expect(try store.convertToIncrementalVacuum())
    #expect(try !store.convertToIncrementalVacuum())
  }
}

/// A state database that no longer reads back as SQLite wrote it.
@Suite struct DamagedStateDatabaseTests {
  let folder = makeStateFolder()

  /// The damage is found before anything is loaded, set aside whole with the working files,
  /// and a new state starts in its place; the set-aside state waits for recovery until it is
  /// marked recovered, and its outbox still reads.
  @Test func aDamagedDatabaseIsFoundAndSetAsideWhole() throws {
    do {
      let store = try LocalStore(directory: folder)
      try store.applySync([
        .addVersion(
          StoredVersion(
            id: [1], payload: [10, 11], path: Array("a".utf8), parents: [], isDocument: true,
            contentHash: nil)),
        .enqueue(id: [1]),
      ])
      let fd = openat(store.workingFiles, LocalStore.workingFileName(7), O_CREAT | O_WRONLY, 0o600)
      #expect(write(fd, "content", 7) == 7)
      close(fd)
      store.shutdown()
    }
    try damageRootPage(of: "entries", in: folder + "/state.sqlite")
    let error = #expect(throws: LocalStoreError.self) { _ = try LocalStore(directory: folder) }
    guard case .damaged(let path, let reason) = error else {
      Issue.record("\(String(describing: error))")
      return
    }
    #expect(path == folder + "/state.sqlite")
    #expect(!reason.isEmpty && !reason.contains("\n"), "\(reason)")
    #expect(LocalStore.statesToRecover(in: folder).isEmpty)

    let aside = try LocalStore.setAside(directory: folder)
    #expect(aside.path.hasPrefix(folder + "/damaged-"))
    #expect(!FileManager.default.fileExists(atPath: folder + "/.setting-aside"))
    #expect(
      try String(
        contentsOfFile: aside.path + "/files/" + LocalStore.workingFileName(7), encoding: .utf8)
        == "content")
    #expect(
      aside.workingFilesBySize()
        == [7: [aside.path + "/files/" + LocalStore.workingFileName(7)]])
    let (records, problem) = aside.unsyncedRecords()
    #expect(problem == nil)
    #expect(records.map(\.id) == [[1]] && records.map(\.payload) == [[10, 11]])

    let fresh = try LocalStore(directory: folder)
    #expect(try fresh.loadSync().outbox.isEmpty)
    fresh.shutdown()
    #expect(LocalStore.statesToRecover(in: folder).map(\.path) == [aside.path])
    try aside.markRecovered()
    #expect(LocalStore.statesToRecover(in: folder).isEmpty)
    // A second damage in the same second gets a folder of its own.
    #expect(try LocalStore.setAside(directory: folder).path != aside.path)
    // A setting aside that a crash cut short is finished before the state opens again.
    #expect(mkdir(folder + "/.setting-aside", 0o700) == 0)
    #expect(
      FileManager.default.createFile(atPath: folder + "/.setting-aside/state.sqlite", contents: nil)
    )
    LocalStore.finishSettingAside(directory: folder)
    #expect(!FileManager.default.fileExists(atPath: folder + "/.setting-aside"))
    let pending = LocalStore.statesToRecover(in: folder)
    #expect(pending.count == 2)
    #expect(pending.contains { FileManager.default.fileExists(atPath: $0.path + "/state.sqlite") })
  }

  /// Damage met later, by a read or a commit, is named as damage too.
  @Test func damageMetLaterIsToldApart() {
    for code in [ResultCode.SQLITE_CORRUPT, .SQLITE_NOTADB] {
      guard case .damaged = LocalStoreError(DatabaseError(resultCode: code)) else {
        Issue.record("\(code) is not damage")
        continue
      }
    }
    let text = LocalStore.failureText(DatabaseError(resultCode: .SQLITE_CORRUPT))
    #expect(text.contains("damaged") && text.contains("mount again"), "\(text)")
    guard case .failed = LocalStoreError(DatabaseError(resultCode: .SQLITE_BUSY)) else {
      Issue.record("a busy database is not damage")
      return
    }
  }
}
