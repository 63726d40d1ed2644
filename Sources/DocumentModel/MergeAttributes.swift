/// The `merge` attribute of the `.docsyncattributes` file at the root of a library, which
/// syncs like `.docsyncignore`: which documents merge by themselves when in conflict.
///
/// gitattributes syntax: a pattern (as in `.docsyncignore`, see ``PathPattern``), then
/// attributes separated by spaces or tabs. `merge` or `merge=text` merges text; `merge=union`
/// keeps both sides where they overlap; `-merge`, `merge=binary` and any other driver (docsync
/// runs none) leave the conflict to the person; `!merge` unsets it. The last matching line that
/// says something about `merge` wins, as in git. As in git, a pattern matches the whole path
/// only (`docs/**`, not `docs/`, reaches inside a folder), and negative patterns are ignored.
/// The file is read by ``AttributeLine``, which ``PackageRules`` shares.
public struct MergeAttributes: Hashable, Sendable {
  /// The root file that holds a library's attributes.
  public static let fileName = ".docsyncattributes"
  public static let filePath = DocumentPath(components: [Array(fileName.utf8)])

  /// No automatic merging: a library without `.docsyncattributes`.
  public static let none = MergeAttributes(lines: [])

  /// One line that mentions `merge`: its pattern and the policy it sets (nil for `!merge`).
  struct Line: Hashable, Sendable {
    let pattern: PathPattern
    let policy: MergePolicy?
  }

  let lines: [Line]

  init(lines: [Line]) { self.lines = lines }

  /// Parses the content of a `.docsyncattributes` file; lines that do not set `merge` are
  /// skipped.
  public init(fileContent: [UInt8]) {
    lines = AttributeLine.lines(of: fileContent).compactMap { Self.line($0) }
  }

  /// How many lines say something about `merge`.
  public var lineCount: Int { lines.count }

  /// The policy for the document at `path`.
  public func policy(for path: DocumentPath) -> MergePolicy {
    for line in lines.reversed() where line.pattern.matches(path.components[...]) {
      return line.policy ?? .manual
    }
    return .manual
  }

  private static func line(_ line: AttributeLine) -> Line? {
    let policy: MergePolicy?
    switch line.state(of: "merge") {
    case nil: return nil
    case .set, .value("text"): policy = .text
    case .value("union"): policy = .union
    case .unspecified: policy = nil
    // `-merge`, `merge=binary` and any driver docsync does not run.
    case .unset, .value: policy = .manual
    }
    return Line(pattern: line.pattern, policy: policy)
  }
}
