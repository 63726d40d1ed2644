/// Where a document's content is, as the read-only attribute `user.docsync.state` reports it
/// to scripts and file managers (files on demand).
public enum ContentAvailability: String, Sendable, Hashable, CaseIterable {
  /// Whole on this device, and the budget may evict it.
  case local
  /// Some of its chunks are here (read in part, or downloading).
  case partial
  /// Only its metadata is here; reading fetches it.
  case online
  /// Kept on this device by `docsync pin` (whole, or downloading now).
  case pinned

  /// The attribute's value: the state, then ` upload` while this device holds changes the
  /// hub does not have yet (such a file is never evicted).
  public func attribute(waitingToUpload: Bool) -> String {
    waitingToUpload ? rawValue + " upload" : rawValue
  }

  /// The state of a document with `present` of its `total` chunks here, pinned or not.
  public static func of(present: Int, total: Int, pinned: Bool) -> ContentAvailability {
    if pinned { return .pinned }
    if present >= total { return .local }
    return present == 0 ? .online : .partial
  }
}
