import DocumentModel
import Testing

/// What `.history` lists: earlier file versions, never a head; folders toward them.
@Suite struct HistoryIndexTests {
  @Test func earlierVersionsAreTheFileVersionsThatSomethingFollows() {
    var set = VersionSet()
    var a = device(1)
    let first = make(&a, &set, "notes/plan.md", fileContent("one"))
    let second = make(&a, &set, "notes/plan.md", fileContent("two"), parents: [first])
    make(&a, &set, "other.md", fileContent("only"))
    var index = HistoryIndex(set)
    #expect(index.earlierVersions(at: path("notes/plan.md"), in: set).map(\.id) == [first.id])
    #expect(index.earlierVersions(at: path("other.md"), in: set).map(\.id).isEmpty)
    #expect(index.folders(in: .root) == [Array("notes".utf8)])
    #expect(index.folders(in: path("notes")) == [Array("plan.md".utf8)])
    #expect(index.hasFolder(path("notes/plan.md")))
    #expect(!index.hasFolder(path("other.md")))

    // A deletion is a head and not listed; what it follows is.
    let deletion = make(&a, &set, "notes/plan.md", .deletion, parents: [second])
    let touched = [deletion.path]
    index.update(from: set, touched: touched)
    #expect(
      index.earlierVersions(at: path("notes/plan.md"), in: set).map(\.id) == [first.id, second.id])
    #expect(index == HistoryIndex(set))

    // A conflict version is a head: in `.versions`, not in `.history`.
    var b = device(2)
    let concurrent = make(&b, &set, "other.md", fileContent("b's"))
    index.update(from: set, touched: [concurrent.path])
    #expect(index.earlierVersions(at: path("other.md"), in: set).map(\.id).isEmpty)
    #expect(index.folders(in: .root) == [Array("notes".utf8)])
  }
}
