/// What renaming a blob into a new working file gave.
public enum BlobMove: Sendable {
  /// The blob is the new working file now.
  case moved(Incoming)
  /// There is no such blob here.
  case absent
  /// The blob held other bytes than its name says, and was removed.
  case damaged
  /// It could not be moved (the caller copies the content instead).
  case failed
}
