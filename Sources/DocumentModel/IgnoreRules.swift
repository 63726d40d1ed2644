/// What never syncs in one library: the built-in editor litter of `IgnoredNames` plus the
/// gitignore-style patterns of the `.docsyncignore` file at the root, which itself syncs.
///
/// Supported: blank lines and `#` comments, `!` to re-include, `*`, `?`, `[a-z]`, `[!a-z]`,
/// `\` to escape, `**` as a whole segment, a leading `/` or a `/` inside a pattern to anchor
/// it at the root, and a trailing `/`. Unlike git, a trailing `/` does not tell folders from
/// files (docsync does not know which a name is at every place it asks): `build/` ignores a
/// file named `build` too. As in git, nothing inside an ignored folder can be re-included.
public struct IgnoreRules: Hashable, Sendable {
  /// The root file that holds a library's patterns.
  public static let fileName = ".docsyncignore"
  public static let filePath = DocumentPath(components: [Array(fileName.utf8)])

  /// The built-in names only: a library without `.docsyncignore`.
  public static let builtIn = IgnoreRules(patterns: [])

  let patterns: [IgnorePattern]

  init(patterns: [IgnorePattern]) { self.patterns = patterns }

  /// Parses the content of a `.docsyncignore` file; lines that are not patterns are skipped.
  public init(fileContent: [UInt8]) {
    patterns = fileContent.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
      .compactMap { IgnorePattern(line: Array($0)) }
  }

  /// How many patterns the library's file adds to the built-in names.
  public var patternCount: Int { patterns.count }

  /// Whether `path` never syncs. `.docsyncignore` and `.docsyncattributes` always sync.
  public func isIgnored(_ path: DocumentPath) -> Bool {
    if path == Self.filePath || path == MergeAttributes.filePath { return false }
    if IgnoredNames.isIgnored(path) { return true }
    guard !patterns.isEmpty else { return false }
    // Each folder on the way down is judged first: what lies in an ignored folder is ignored.
    for length in stride(from: 1, through: path.components.count, by: 1) {
      let prefix = path.components.prefix(length)
      var ignored = false
      for pattern in patterns where pattern.matches(prefix) { ignored = !pattern.negated }
      if ignored { return true }
    }
    return false
  }
}

/// One line of `.docsyncignore`.
struct IgnorePattern: Hashable, Sendable {
  let negated: Bool
  let pattern: PathPattern

  init?(line raw: [UInt8]) {
    var line = raw[...]
    if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
    // Trailing spaces are dropped unless escaped, as git does.
    while line.last == UInt8(ascii: " "), line.dropLast().last != UInt8(ascii: "\\") {
      line = line.dropLast()
    }
    guard let first = line.first, first != UInt8(ascii: "#") else { return nil }
    negated = first == UInt8(ascii: "!")
    if negated { line = line.dropFirst() }
    if line.first == UInt8(ascii: "\\"),
      line.dropFirst().first == UInt8(ascii: "#") || line.dropFirst().first == UInt8(ascii: "!")
    {
      line = line.dropFirst()
    }
    guard let pattern = PathPattern(line) else { return nil }
    self.pattern = pattern
  }

  func matches(_ components: ArraySlice<[UInt8]>) -> Bool { pattern.matches(components) }
}

/// Shell-style matching of one name: `*`, `?`, `[...]` and `\`.
enum Glob {
  static func matches(_ pattern: ArraySlice<UInt8>, _ name: ArraySlice<UInt8>) -> Bool {
    var p = pattern.startIndex
    var n = name.startIndex
    // Where to resume after the latest `*`: classic backtracking, linear in practice.
    var star: (pattern: Int, name: Int)?
    while n < name.endIndex {
      if p < pattern.endIndex {
        let c = pattern[p]
        if c == UInt8(ascii: "*") {
          star = (p + 1, n)
          p += 1
          continue
        }
        if c == UInt8(ascii: "?") {
          p += 1
          n += 1
          continue
        }
        if c == UInt8(ascii: "["), let (matched, end) = bracket(pattern, p, name[n]) {
          if matched {
            p = end
            n += 1
            continue
          }
        } else {
          var literal = c
          var next = p + 1
          if c == UInt8(ascii: "\\"), next < pattern.endIndex {
            literal = pattern[next]
            next += 1
          }
          if literal == name[n] {
            p = next
            n += 1
            continue
          }
        }
      }
      guard let resume = star else { return false }
      star = (resume.pattern, resume.name + 1)
      p = resume.pattern
      n = resume.name + 1
    }
    while p < pattern.endIndex && pattern[p] == UInt8(ascii: "*") { p += 1 }
    return p == pattern.endIndex
  }

  /// Matches `byte` against the bracket expression at `start`; nil when it is not closed (then
  /// `[` is a literal).
  private static func bracket(_ pattern: ArraySlice<UInt8>, _ start: Int, _ byte: UInt8)
    -> (Bool, Int)?
  {
    var i = start + 1
    var negate = false
    if i < pattern.endIndex, pattern[i] == UInt8(ascii: "!") || pattern[i] == UInt8(ascii: "^") {
      negate = true
      i += 1
    }
    var matched = false
    var first = true
    while i < pattern.endIndex {
      let c = pattern[i]
      if c == UInt8(ascii: "]") && !first { return (matched != negate, i + 1) }
      first = false
      if i + 2 < pattern.endIndex, pattern[i + 1] == UInt8(ascii: "-"),
        pattern[i + 2] != UInt8(ascii: "]")
      {
        if c <= byte && byte <= pattern[i + 2] { matched = true }
        i += 3
      } else {
        if c == byte { matched = true }
        i += 1
      }
    }
    return nil
  }
}
