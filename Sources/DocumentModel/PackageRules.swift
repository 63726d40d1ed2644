/// Which folders of a library are packages: folders whose files only make sense together (a
/// git repository's `.git`, a Scrivener project, a macOS bundle), versioned as one document
/// (docs/packages.md).
///
/// A built-in list (``builtInPatterns``), then the `package` attribute of `.docsyncattributes`,
/// read by the same parser as `merge` (``AttributeLine``): `*.sketch package` makes folders a
/// package, `-package` turns one off (a built-in one too: `vendor/**/.git -package`), `!package`
/// returns to the built-in answer; `package=…` says nothing (docsync knows no kinds of
/// package). The last matching line of the library's file that says something wins, as in git.
///
/// The rules speak of folders only: a *file* named `server.key` or `.git` (a git worktree's or
/// submodule's pointer file) is an ordinary document whatever they say. Packages do not nest:
/// the outermost folder that is a package holds everything below it, including folders that
/// would be packages on their own (see ``packageRoot(of:isFolder:)``).
public struct PackageRules: Hashable, Sendable {
  /// The folders that are packages in every library unless `-package` says otherwise.
  ///
  /// The metadata folders of version control, whose refs, index and objects must move together
  /// (`.git`; Mercurial's `.hg` and Subversion's `.svn` keep the same kind of database), and
  /// document bundles that their programs write as a whole: Scrivener projects, RTF with
  /// attachments, Pages, Keynote, Numbers, Logic Pro and GarageBand. Calibre and Zotero
  /// libraries and Ardour sessions have no fixed name or extension (a Calibre library is any
  /// folder holding `metadata.db`), so they are one `.docsyncattributes` line away instead
  /// of built in: `Calibre?Library package`, `Zotero package`, `Sessions/* package`.
  public static let builtInPatterns = [
    ".git", ".hg", ".svn",
    "*.scriv", "*.rtfd", "*.pages", "*.key", "*.numbers", "*.logicx", "*.band",
  ]

  /// The built-in list alone: a library whose `.docsyncattributes` says nothing about packages.
  public static let builtIn = PackageRules(lines: [])

  /// The built-in list as patterns.
  private static let builtInLines: [PathPattern] = builtInPatterns.map {
    PathPattern(Array($0.utf8)[...])!
  }

  /// One line of the library's file that mentions `package`: its pattern and what it says
  /// (nil for `!package`: back to the built-in answer).
  struct Line: Hashable, Sendable {
    let pattern: PathPattern
    let isPackage: Bool?
  }

  let lines: [Line]

  init(lines: [Line]) { self.lines = lines }

  /// The built-in list and the `package` lines of a `.docsyncattributes` file.
  public init(fileContent: [UInt8]) {
    lines = AttributeLine.lines(of: fileContent).compactMap { line in
      switch line.state(of: "package") {
      case .set: Line(pattern: line.pattern, isPackage: true)
      case .unset: Line(pattern: line.pattern, isPackage: false)
      case .unspecified: Line(pattern: line.pattern, isPackage: nil)
      case .value, nil: nil
      }
    }
  }

  /// How many lines of the library's file say something about `package`.
  public var lineCount: Int { lines.count }

  /// Whether a folder at `path` is a package by the rules alone, whatever holds it (a folder
  /// inside another package is part of that one: ask ``packageRoot(of:isFolder:)``).
  public func isPackage(folder path: DocumentPath) -> Bool {
    isPackage(components: path.components[...])
  }

  /// The package that `path` is or lies in: the outermost folder on the way to it that is a
  /// package, `path` itself only when it is a folder. Nil for a path in no package, for the
  /// root, and inside `.versions` and `.history` (which are never documents).
  ///
  /// The outermost wins because a package is one document, snapshotted and applied as a whole:
  /// a `.git` inside a `*.scriv` that were its own package would land at another moment than
  /// the project around it, which is the mix packages exist to prevent, and a version of the
  /// outer package already holds the inner one consistently.
  public func packageRoot(of path: DocumentPath, isFolder: Bool) -> DocumentPath? {
    let components = path.components
    guard let first = components.first,
      first != IgnoredNames.versionsFolder, first != IgnoredNames.historyFolder
    else { return nil }
    let deepest = isFolder ? components.count : components.count - 1
    guard deepest >= 1 else { return nil }
    for length in 1...deepest where isPackage(components: components.prefix(length)) {
      return DocumentPath(components: Array(components.prefix(length)))
    }
    return nil
  }

  /// Whether `path` lies strictly inside a package: its content is part of that package's
  /// versions, and it has no versions of its own.
  public func isInsidePackage(_ path: DocumentPath) -> Bool {
    packageRoot(of: path, isFolder: false) != nil
  }

  /// The folders among `folders` that a change of the library's rules to `newer` converts:
  /// those that become package roots (their files' documents become the package's first
  /// version) and those that stop being one (the package's current version becomes documents).
  /// A folder that a new outer package swallows stops being a root too; each list is sorted.
  public func conversions(to newer: PackageRules, among folders: some Sequence<DocumentPath>)
    -> (becomePackages: [DocumentPath], stopBeingPackages: [DocumentPath])
  {
    var become: [DocumentPath] = []
    var stop: [DocumentPath] = []
    for folder in folders {
      let was = packageRoot(of: folder, isFolder: true) == folder
      let now = newer.packageRoot(of: folder, isFolder: true) == folder
      if now && !was { become.append(folder) }
      if was && !now { stop.append(folder) }
    }
    return (become.sorted(), stop.sorted())
  }

  private func isPackage(components: ArraySlice<[UInt8]>) -> Bool {
    for line in lines.reversed() where line.pattern.matches(components) {
      if let isPackage = line.isPackage { return isPackage }
      break
    }
    return Self.builtInLines.contains { $0.matches(components) }
  }
}
