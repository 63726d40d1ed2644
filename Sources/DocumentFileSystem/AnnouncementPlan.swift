/// What the raising process does with an announcement.
public enum AnnouncementPlan: Sendable, Equatable {
  /// Raise it; for new content, with the size the file has now.
  case raise(size: Int64)
  /// Nobody can be watching (the kernel knows neither the folder nor the inode), or the path
  /// changed again since: nothing to raise.
  case skip
}
