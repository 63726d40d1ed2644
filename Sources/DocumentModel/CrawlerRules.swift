/// Which programs are crawlers (indexers, thumbnailers, scanners) that must not download a
/// library by opening its online files: their opens of content that is not here fail fast
/// instead (files on demand). Matched by the caller's executable name.
///
/// A built-in list, which people extend or trim with lines of their own: `NAME` adds a
/// program, `-NAME` lets a built-in one in, `#` starts a comment.
public struct CrawlerRules: Sendable, Hashable {
  /// Executable names of the indexers, thumbnailers and scanners of Debian's desktops.
  public static let builtIn: Set<String> = [
    // GNOME's indexer (Tracker 3, renamed LocalSearch in GNOME 47) and its extractors.
    "tracker-miner-fs", "tracker-miner-fs-3", "tracker-extract", "tracker-extract-3",
    "localsearch-3", "localsearch-extractor-3",
    // KDE's indexer.
    "baloo_file", "baloo_file_extractor", "baloorunner",
    // Thumbnailers: XFCE's service, GNOME's factory and the thumbnailers it runs.
    "tumblerd", "gnome-thumbnail-factory", "gdk-pixbuf-thumbnailer", "totem-video-thumbnailer",
    "evince-thumbnailer", "ffmpegthumbnailer", "gnome-epub-thumbnailer",
    "gnome-mobi-thumbnailer", "gsf-office-thumbnailer",
    // Virus scanners and desktop search.
    "clamd", "clamscan", "clamdscan", "recollindex",
  ]

  /// The names treated as crawlers.
  public let names: Set<String>

  public init(names: Set<String> = Self.builtIn) {
    self.names = names
  }

  /// The built-in list changed by `text` (a file of lines). A line that is not a name is
  /// refused with its number, so that a typo does not silently let a crawler in.
  public init(adjusting text: String) throws(CrawlerRulesError) {
    var names = Self.builtIn
    for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
    {
      let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
        .trimmingWhitespace()
      guard !line.isEmpty else { continue }
      let removing = line.hasPrefix("-")
      let name = removing ? String(line.dropFirst()) : line
      guard Self.isName(name) else { throw CrawlerRulesError(line: number + 1, text: line) }
      if removing { names.remove(name) } else { names.insert(name) }
    }
    self.init(names: names)
  }

  /// Whether the program whose executable is `executable` (a path, as `/proc/PID/exe` names it,
  /// or a bare name) is a crawler. The kernel's 15-byte `comm` is matched too, for a program
  /// whose executable cannot be read (another user's process, or a deleted file).
  public func isCrawler(executable: String?, command: String? = nil) -> Bool {
    if let executable {
      var name = executable.split(separator: "/").last.map(String.init) ?? executable
      // A program replaced by an upgrade while it runs: "/usr/bin/clamd (deleted)".
      if name.hasSuffix(" (deleted)") { name.removeLast(" (deleted)".count) }
      if names.contains(name) { return true }
    }
    if let command, !command.isEmpty {
      return names.contains(command)
        || names.contains {
          $0.utf8.count > 15 && $0.hasPrefix(command) && command.utf8.count == 15
        }
    }
    return false
  }

  static func isName(_ name: String) -> Bool {
    !name.isEmpty && name.utf8.count <= 255 && !name.contains("/")
      && !name.contains(where: \.isWhitespace)
  }
}

extension StringProtocol {
  fileprivate func trimmingWhitespace() -> String {
    String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
  }
}
