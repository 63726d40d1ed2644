import DocumentModel
import Testing

/// `.docsyncignore` patterns, gitignore-style, on top of the built-in editor litter.
@Suite("Ignore rules")
struct IgnoreRulesTests {
  private func rules(_ text: String) -> IgnoreRules { IgnoreRules(fileContent: Array(text.utf8)) }

  private func expectIgnored(
    _ rules: IgnoreRules, _ ignored: [String], kept: [String],
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    for path in ignored {
      #expect(rules.isIgnored(DocumentPath(path)), "\(path)", sourceLocation: sourceLocation)
    }
    for path in kept {
      #expect(!rules.isIgnored(DocumentPath(path)), "\(path)", sourceLocation: sourceLocation)
    }
  }

  @Test func builtInNamesStayIgnoredAndTheFileItselfSyncs() {
    let everything = rules("*\n.docsyncignore\n")
    expectIgnored(everything, ["a.txt", ".plan.md.swp", "dir/x"], kept: [".docsyncignore"])
    expectIgnored(.builtIn, ["4913", "d/plan.md~", ".versions/x"], kept: ["plan.md", "d/e"])
    #expect(IgnoreRules.builtIn.patternCount == 0)
    #expect(rules("# comment\n\n*.log\n   \n").patternCount == 1)
  }

  @Test func aNameWithoutASlashMatchesAtAnyDepth() {
    expectIgnored(
      rules("*.log\nbuild/\nnode_modules\n"),
      ["a.log", "deep/in/b.log", "build", "src/build/out.o", "node_modules/x/y.js"],
      kept: ["log", "a.log.txt", "builds/x", "src/a.md"])
  }

  @Test func aSlashAnchorsAtTheRoot() {
    expectIgnored(
      rules("/todo.txt\ndocs/*.pdf\n/out/\n"),
      ["todo.txt", "docs/a.pdf", "out", "out/deep/file"],
      kept: ["sub/todo.txt", "docs/deep/a.pdf", "sub/docs/a.pdf", "sub/out/file"])
  }

  @Test func doubleStarSpansFolders() {
    expectIgnored(
      rules("**/cache\nlogs/**\na/**/z.txt\n"),
      ["cache", "x/y/cache/file", "logs/1", "logs/d/2", "a/z.txt", "a/b/c/z.txt"],
      kept: ["logs", "b/logs/1", "a/z.md", "cachex"])
  }

  @Test func negationReincludesButNotInsideAnIgnoredFolder() {
    expectIgnored(
      rules("*.log\n!keep.log\nsecret/\n!secret/open.txt\n"),
      ["a.log", "d/b.log", "secret/open.txt", "secret/x"],
      kept: ["keep.log", "d/keep.log"])
  }

  @Test func characterClassesQuestionMarksAndEscapes() {
    expectIgnored(
      rules("draft[0-9].md\nv?.txt\n[!a]x\n\\#literal\n\\!bang\nstar\\*\n"),
      ["draft1.md", "v2.txt", "bx", "#literal", "!bang", "star*"],
      kept: ["draftx.md", "v10.txt", "ax", "starx", "draft[0-9].md"])
  }

  @Test func windowsLineEndingsAndTrailingSpaces() {
    expectIgnored(rules("*.tmp\r\nnotes.bak   \n"), ["a.tmp", "notes.bak"], kept: ["a.tmpx"])
  }
}
