import DocumentModel
import Testing

/// `.docsyncattributes`: gitattributes lines that set the `merge` attribute.
@Suite("Merge attributes")
struct MergeAttributesTests {
  private func policy(_ text: String, _ path: String) -> MergePolicy {
    MergeAttributes(fileContent: Array(text.utf8)).policy(for: DocumentPath(path))
  }

  @Test func theMergeAttributeSetsThePolicy() {
    #expect(policy("*.md merge=text\n", "notes/plan.md") == .text)
    #expect(policy("*.md merge\n", "plan.md") == .text)
    #expect(policy("*.txt\tmerge=union  eol=lf\n", "log.txt") == .union)
    #expect(policy("*.md -merge\n", "plan.md") == .manual)
    #expect(policy("*.md merge=binary\n", "plan.md") == .manual)
    #expect(policy("*.md merge=custom-driver\n", "plan.md") == .manual)
    #expect(policy("*.md merge=text\n", "plan.txt") == .manual)
    #expect(MergeAttributes.none.policy(for: DocumentPath("plan.md")) == .manual)
  }

  @Test func theLastMatchingLineThatSaysSomethingAboutMergeWins() {
    let text = """
      # notes merge, except drafts
      *.md merge=text
      drafts/*.md -merge
      drafts/shared.md merge=union
      *.md eol=lf
      /top.md !merge
      *.log merge=text merge=union

      """
    #expect(policy(text, "a/b/plan.md") == .text)
    #expect(policy(text, "drafts/x.md") == .manual)
    #expect(policy(text, "drafts/shared.md") == .union)
    #expect(policy(text, "top.md") == .manual)
    #expect(policy(text, "sub/top.md") == .text)
    #expect(policy(text, "app.log") == .union)
    #expect(MergeAttributes(fileContent: Array(text.utf8)).lineCount == 5)
  }

  @Test func patternsMatchTheWholePathAndNegativeOnesAreIgnored() {
    #expect(policy("docs/ merge=text\n", "docs/a.md") == .manual)
    #expect(policy("docs/** merge=text\n", "docs/a/b.md") == .text)
    #expect(policy("*.md merge=text\n!x.md -merge\n", "x.md") == .text)
    #expect(policy("\\#odd.md merge=text\n", "#odd.md") == .text)
  }

  @Test func theAttributesFileAlwaysSyncs() {
    let everything = IgnoreRules(fileContent: Array("*\n".utf8))
    #expect(!everything.isIgnored(MergeAttributes.filePath))
  }

  /// `merge` lines read by the shared attribute parser mean what they meant when
  /// MergeAttributes read them itself: this is that earlier reading, field by field, over
  /// random lines whose pattern matches every path.
  @Test(arguments: 0..<20) func theSharedParserReadsMergeAsBefore(seed: Int) {
    let fields = [
      "merge", "merge=text", "merge=union", "-merge", "!merge", "merge=binary", "merge=",
      "merge=text=x", "eol=lf", "-text", "package", "-package", "!", "-", "=x", "merged",
    ]
    func earlier(_ line: [String]) -> MergePolicy?? {
      var said: MergePolicy??
      for field in line {
        switch field {
        case "merge", "merge=text": said = .some(.text)
        case "merge=union": said = .some(.union)
        case "!merge": said = .some(nil)
        case "-merge": said = .some(.manual)
        case let other where other.hasPrefix("merge="): said = .some(.manual)
        default: continue
        }
      }
      return said
    }
    var random = SplitMix64(state: UInt64(seed))
    var text = ""
    var expected = MergePolicy.manual
    for _ in 0..<random.below(12) {
      let line = (0..<random.below(4)).map { _ in random.pick(fields) }
      let separator = random.chance(50) ? " " : "\t"
      switch random.below(10) {
      case 0: text += "# * " + line.joined(separator: separator) + "\n"
      case 1: text += "!* " + line.joined(separator: separator) + "\n"
      default:
        text += "*" + separator + line.joined(separator: separator)
        text += random.chance(20) ? "\r\n" : "\n"
        if let said = earlier(line) { expected = said ?? .manual }
      }
    }
    #expect(policy(text, "notes/plan.md") == expected, "\(text)")
  }
}
