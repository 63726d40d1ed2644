import DocumentModel
import Testing

/// Heads with equal content are one version: no conflict, and one merge record that every
/// device makes alike.
@Suite struct EqualHeadsTests {
  /// `doc` saved on each device with `texts` (nil: deleted), after a common base when `base`
  /// is given.
  func saves(
    _ texts: [String?], base: String? = "base\n", executable: [Bool]? = nil
  ) -> (VersionSet, [VersionRecord]) {
    var set = VersionSet()
    var origin = device(9, "origin")
    let root = base.map { make(&origin, &set, "doc", fileContent($0), now: 1_000) }
    var heads: [VersionRecord] = []
    for (index, text) in texts.enumerated() {
      var author = device(UInt64(index + 1))
      let content =
        text.map { fileContent($0, executable: executable?[index] ?? false) } ?? .deletion
      heads.append(
        make(
          &author, &set, "doc", content, parents: root.map { [$0] } ?? [],
          now: 2_000 + UInt64(index) * 10))
    }
    return (set, heads)
  }

  @Test(arguments: [true, false])
  func equalSavesAreNoConflictAndMergeIntoOneRecord(fromABase: Bool) throws {
    let (set, heads) = saves(["same\n", "same\n"], base: fromABase ? "base\n" : nil)
    let state = LibraryState(set)
    #expect(state.conflicts.isEmpty)
    #expect(state.versionsListing.isEmpty)
    #expect(state.equalHeads == [path("doc")])
    #expect(state.current(at: path("doc"))?.content == fileContent("same\n"))
    let merge = try #require(AutoMerge.sameContent(at: path("doc"), in: set))
    #expect(merge.headIDs == heads.map(\.id).sorted())
    #expect(merge.neededContent.isEmpty)
    let record = merge.record(content: try #require(merge.sameContent))
    #expect(record.content == fileContent("same\n"))
    #expect(record.parents == heads.map(\.id).sorted())
    #expect(record.deviceID == AutoMerge.deviceID)
    // The content time is the current head's, so no device writes the file again.
    #expect(record.contentTime == state.current(at: path("doc"))?.contentTime)
    // Every device makes this record, whatever order it learned the heads in.
    let reversed = VersionSet(set.records.values.sorted { $0.id > $1.id })
    #expect(
      AutoMerge.sameContent(at: path("doc"), in: reversed)?.record(content: record.content)
        == record)
    var merged = set
    let touched = merged.insert(contentsOf: [record])
    var after = state
    after.update(from: merged, touched: touched)
    #expect(after == LibraryState(merged))
    #expect(after.equalHeads.isEmpty && after.conflicts.isEmpty)
    #expect(merged.heads(at: path("doc")) == [record])
    #expect(AutoMerge.sameContent(at: path("doc"), in: merged) == nil)
  }

  @Test func anotherExecutableBitIsAnotherVersion() {
    let (set, _) = saves(["same\n", "same\n"], executable: [false, true])
    let state = LibraryState(set)
    #expect(state.conflicts[path("doc")]?.count == 1)
    #expect(state.equalHeads.isEmpty)
    #expect(AutoMerge.sameContent(at: path("doc"), in: set) == nil)
  }

  @Test func twoDeletionsMergeIntoOneDeletion() throws {
    let (set, heads) = saves([nil, nil])
    let state = LibraryState(set)
    #expect(state.entries[path("doc")] == nil && state.conflicts.isEmpty)
    #expect(state.equalHeads == [path("doc")])
    let merge = try #require(AutoMerge.sameContent(at: path("doc"), in: set))
    let record = merge.record(content: try #require(merge.sameContent))
    #expect(record.content == .deletion && record.contentTime == nil)
    #expect(record.parents == heads.map(\.id).sorted())
  }

  @Test func twoFoldersMergeIntoOneFolder() throws {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    let folders = [
      make(&a, &set, "objects", .directory), make(&b, &set, "objects", .directory, now: 1_010),
    ]
    #expect(LibraryState(set).equalHeads == [path("objects")])
    let merge = try #require(AutoMerge.sameContent(at: path("objects"), in: set))
    #expect(merge.record(content: .directory).parents == folders.map(\.id).sorted())
  }

  @Test func twoEqualAndOneOtherStayAConflictWithOneVersionForTheEqualOnes() throws {
    // The equal saves are later than the other one on device 3, and earlier.
    for (texts, winner) in [
      (["same\n", "same\n", "other\n"], "other\n"), (["other\n", "same\n", "same\n"], "same\n"),
    ] {
      let (set, heads) = saves(texts)
      let state = LibraryState(set)
      let current = try #require(state.current(at: path("doc")))
      #expect(current.content == fileContent(winner))
      let versions = try #require(state.conflicts[path("doc")])
      #expect(versions.count == 1)
      #expect(versions.map(\.content) != [current.content])
      let merge = try #require(AutoMerge.sameContent(at: path("doc"), in: set))
      let equal = heads.filter { $0.content == fileContent("same\n") }
      #expect(merge.headIDs == equal.map(\.id).sorted())
      var merged = set
      let touched = merged.insert(contentsOf: [merge.record(content: fileContent("same\n"))])
      var after = state
      after.update(from: merged, touched: touched)
      // The same current content, still one conflict version, no merge due.
      #expect(after.current(at: path("doc"))?.content == current.content)
      #expect(after.conflicts[path("doc")]?.map(\.content) == versions.map(\.content))
      #expect(after.equalHeads.isEmpty)
      #expect(merged.heads(at: path("doc")).count == 2)
    }
  }

  @Test func aFileAgainstTwoEqualFilesUnderAFolderListsOneVersion() {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    var c = device(3)
    make(&a, &set, "thing", fileContent("same\n"))
    make(&b, &set, "thing", fileContent("same\n"), now: 1_010)
    make(&c, &set, "thing", .directory, now: 1_020)
    let state = LibraryState(set)
    #expect(state.entries[path("thing")] == .directory(set.winner(at: path("thing"))))
    #expect(state.conflicts[path("thing")]?.count == 1)
    #expect(state.equalHeads == [path("thing")])
  }

  @Test func discardingAVersionDiscardsTheHeadsEqualToIt() throws {
    // "other" is current, the two equal saves are listed as one version.
    let (set, heads) = saves(["same\n", "same\n", "other\n"])
    var state = LibraryState(set)
    let listed = try #require(state.conflicts[path("doc")]?.first)
    let changes = Resolution.discard(listed.id).changes(in: set, state: state)
    #expect(changes.count == 1)
    let equal = heads.filter { $0.content == fileContent("same\n") }.map(\.id)
    #expect(Set(try #require(changes.first).parents).isSuperset(of: equal))
    var author = device(4)
    var after = set
    let touched = after.insert(contentsOf: author.record(changes, known: set, now: 5_000))
    state.update(from: after, touched: touched)
    #expect(state.conflicts.isEmpty && state.equalHeads.isEmpty)
  }

  @Test func anEditBeforeTheMergeFollowsEveryEqualHead() {
    let (set, heads) = saves(["same\n", "same\n"])
    var author = device(1)
    let edit = author.record(
      [PendingChange(path: path("doc"), content: fileContent("edited\n"), parents: [heads[0].id])],
      known: set, now: 5_000)[0]
    #expect(edit.parents == heads.map(\.id).sorted())
    var after = set
    after.insert(edit)
    #expect(LibraryState(after).conflicts.isEmpty)
  }
}
