/// Editor and system artifacts that never become documents (DESIGN.md, "How editors save").
///
/// Short-lived temp files with ordinary names (`sedXXXXXX`, `lu*.tmp`) are not listed: the quiet
/// window of `SaveCoalescer` folds them away instead.
public enum IgnoredNames {
  /// The reserved folder at the root of the mount.
  public static let versionsFolder = Array(".versions".utf8)
  /// The reserved folder of earlier versions at the root of the mount.
  public static let historyFolder = Array(".history".utf8)

  /// Whether one name matches `4913`, `.*.sw?`, `*~`, `#*#`, `.#*`, `.goutputstream-*`,
  /// `.~lock.*#`, `*.vsctmp`, `.fuse_hidden*`, `~$*` (Microsoft Office's owner files) or
  /// `*.part` (downloads in progress in browsers and KIO).
  public static func isIgnored(name: [UInt8]) -> Bool {
    // Every pattern starts with one of `4 . # ~`, or is `*~`, `*.vsctmp` or `*.part`: most
    // names are told apart by their first and last bytes (every path of every window asks,
    // many times).
    guard let first = name.first, let last = name.last else { return false }
    switch first {
    case UInt8(ascii: "4"), UInt8(ascii: "."), UInt8(ascii: "#"), UInt8(ascii: "~"):
      break
    default:
      switch last {
      case UInt8(ascii: "~"): return true
      case UInt8(ascii: "p"): return name.count >= 7 && name.suffix(7).elementsEqual(".vsctmp".utf8)
      case UInt8(ascii: "t"): return name.count >= 5 && name.suffix(5).elementsEqual(".part".utf8)
      default: return false
      }
    }
    func starts(_ text: String) -> Bool { name.starts(with: text.utf8) }
    func ends(_ text: String) -> Bool { name.reversed().starts(with: text.utf8.reversed()) }
    if name == Array("4913".utf8) { return true }
    if ends("~") || starts(".#") || starts(".goutputstream-") || ends(".vsctmp")
      || starts(".fuse_hidden") || starts("~$") || ends(".part")
    {
      return true
    }
    if name.count >= 2 && starts("#") && ends("#") { return true }
    if name.count >= 8 && starts(".~lock.") && ends("#") { return true }
    // `.*.sw?`: vim's swap files `.f.swp`, `.f.swo`, ...
    if name.count >= 5 && starts(".")
      && name[name.count - 4..<name.count - 1].elementsEqual(".sw".utf8)
    {
      return true
    }
    return false
  }

  /// Whether a path never syncs: it is `.versions` or `.history` at the root or below them, or
  /// any component is ignored.
  public static func isIgnored(_ path: DocumentPath) -> Bool {
    if path.components.first == versionsFolder || path.components.first == historyFolder {
      return true
    }
    return path.components.contains(where: isIgnored(name:))
  }
}
