import DocumentModel
import Testing

@Suite struct SaveCoalescerTests {
  let f = path("doc/f.txt")
  let old: VersionRecord
  let before: [DocumentPath: VersionRecord]

  init() {
    var set = VersionSet()
    var a = device(1)
    old = make(&a, &set, "doc/f.txt", fileContent("old"))
    before = [f: old]
  }

  func single(_ ops: [LocalOperation], _ after: [DocumentPath: VersionContent]) -> [PendingChange] {
    SaveCoalescer.changes(operations: ops, before: before, after: after)
  }

  @Test func tempFileRenamedOverIsOneVersionOfTheTarget() {
    for temp in ["doc/.goutputstream-X1Y2", "doc/sedAb12Cd", "doc/lu123.tmp", "doc/f.txt.vsctmp"] {
      let changes = single(
        [.create(path(temp)), .write(path(temp)), .rename(from: path(temp), to: f)],
        [f: fileContent("new")])
      #expect(changes == [PendingChange(path: f, content: fileContent("new"), parents: [old.id])])
    }
  }

  @Test func vimBackupByRenameContinuesHistory() {
    let backup = path("doc/f.txt~")
    let probe = path("doc/4913")
    let swap = path("doc/.f.txt.swp")
    let changes = single(
      [
        .create(swap), .create(probe), .remove(probe), .rename(from: f, to: backup), .create(f),
        .write(f), .remove(backup), .write(swap),
      ],
      [f: fileContent("new"), swap: fileContent("swap")])
    #expect(changes == [PendingChange(path: f, content: fileContent("new"), parents: [old.id])])
  }

  @Test func emacsBackupThatStaysIsIgnored() {
    let backup = path("doc/f.txt~")
    let changes = single(
      [.create(path("doc/.#f.txt")), .rename(from: f, to: backup), .create(f), .write(f)],
      [f: fileContent("new"), backup: fileContent("old"), path("doc/.#f.txt"): fileContent("lock")])
    #expect(changes == [PendingChange(path: f, content: fileContent("new"), parents: [old.id])])
  }

  @Test func truncateAndRewriteIsOneVersion() {
    let changes = single([.write(f), .write(f), .write(f)], [f: fileContent("new")])
    #expect(changes == [PendingChange(path: f, content: fileContent("new"), parents: [old.id])])
  }

  @Test func unchangedContentAndVanishedTempsMakeNothing() {
    #expect(single([.write(f)], [f: fileContent("old")]).isEmpty)
    let temp = path("doc/sedXYZ")
    #expect(single([.create(temp), .write(temp), .remove(temp)], [f: fileContent("old")]).isEmpty)
  }

  @Test func renameIsDeletionPlusVersionNamingOrigin() {
    let g = path("doc/g.txt")
    let changes = single([.rename(from: f, to: g)], [g: fileContent("old")])
    #expect(
      changes == [
        PendingChange(path: f, content: .deletion, parents: [old.id]),
        PendingChange(
          path: g, content: fileContent("old"), parents: [],
          origin: RenameOrigin(path: f, version: old.id)),
      ])
  }

  @Test func folderRenameMovesEverythingBelow() {
    let changes = single(
      [.rename(from: path("doc"), to: path("moved"))], [path("moved/f.txt"): fileContent("old")])
    #expect(changes.contains(PendingChange(path: f, content: .deletion, parents: [old.id])))
    #expect(
      changes.contains(
        PendingChange(
          path: path("moved/f.txt"), content: fileContent("old"), parents: [],
          origin: RenameOrigin(path: f, version: old.id))))
  }

  @Test func deleteAndRecreateGivesDeletionThenNewHistory() {
    #expect(
      single([.remove(f)], [:]) == [PendingChange(path: f, content: .deletion, parents: [old.id])])
    let changes = single([.remove(f), .create(f), .write(f)], [f: fileContent("again")])
    #expect(changes == [PendingChange(path: f, content: fileContent("again"), parents: [old.id])])
  }

  @Test func ignoredNamesNeverBecomeDocuments() {
    for name in [
      "4913", ".x.swp", "x~", "#x#", ".#x", ".goutputstream-1", ".~lock.x#", "x.vsctmp",
      ".fuse_hidden1",
    ] {
      let p = path("doc/" + name)
      #expect(
        single([.create(p), .write(p)], [p: fileContent("junk"), f: fileContent("old")]).isEmpty)
    }
  }

  @Test func savesThroughCoalescerFormOneLineOfHistory() {
    var set = VersionSet([old])
    var a = device(1)
    var current = old
    for step in 0..<5 {
      let temp = path("doc/.goutputstream-\(step)")
      let changes = SaveCoalescer.changes(
        operations: [.create(temp), .write(temp), .rename(from: temp, to: f)], before: [f: current],
        after: [f: fileContent("v\(step)")])
      let records = a.record(changes, known: set, now: 1_000_000 - UInt64(step) * 100_000)
      set.insert(contentsOf: records)
      #expect(records.count == 1 && records[0].parents == [current.id])
      current = records[0]
    }
    #expect(set.heads(at: f) == [current])
    #expect(LibraryState(set).conflicts.isEmpty)
  }
}
