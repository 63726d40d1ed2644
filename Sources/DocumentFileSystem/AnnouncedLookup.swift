import Glibc

/// How the file system answers a lookup of the raising process.
public enum AnnouncedLookup: Sendable {
  /// As any lookup.
  case normal
  /// Not there: the name sync has made must look new to the create that announces it.
  case hidden
  /// The entry sync has removed, once more, so that the unlink that announces it finds it.
  case found(stat)
}
