/// A gitignore-style path pattern, shared by `.docsyncignore` and `.docsyncattributes`: `*`,
/// `?`, `[a-z]`, `\` to escape, `**` as a whole segment, and a `/` at the start or inside to
/// anchor it at the root (otherwise it matches the last name at any depth). A trailing `/` is
/// dropped (see ``IgnoreRules`` for why folders are not told from files).
struct PathPattern: Hashable, Sendable {
  /// Matched against the whole path from the root, segment by segment; otherwise against the
  /// last name only, at any depth.
  let anchored: Bool
  let segments: [[UInt8]]

  /// Parses the pattern text of one line (no comment, negation or attributes); nil when it
  /// names nothing.
  init?(_ text: ArraySlice<UInt8>) {
    var line = text
    while line.last == UInt8(ascii: "/") { line = line.dropLast() }
    let parts = line.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
    anchored = parts.count > 1
    let kept = parts.filter { !$0.isEmpty }.map(Array.init)
    guard !kept.isEmpty else { return nil }
    segments = kept
  }

  /// Whether the path whose names are `components` matches.
  func matches(_ components: ArraySlice<[UInt8]>) -> Bool {
    guard anchored else {
      return components.last.map { Glob.matches(segments[0][...], $0[...]) } ?? false
    }
    return Self.match(segments[...], components)
  }

  private static func match(_ pattern: ArraySlice<[UInt8]>, _ path: ArraySlice<[UInt8]>) -> Bool {
    guard let head = pattern.first else { return path.isEmpty }
    if head == Array("**".utf8) {
      let rest = pattern.dropFirst()
      // `**` takes zero or more folders; `foo/**` needs something inside foo.
      if rest.isEmpty { return !path.isEmpty }
      for skip in 0...path.count where match(rest, path.dropFirst(skip)) { return true }
      return false
    }
    guard let name = path.first, Glob.matches(head[...], name[...]) else { return false }
    return match(pattern.dropFirst(), path.dropFirst())
  }
}
