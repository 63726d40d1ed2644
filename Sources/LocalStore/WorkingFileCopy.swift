/// What copying content into a new working file gave.
public enum WorkingFileCopy: Sendable {
  /// The file, whole, checked and with the version's time.
  case made(Incoming)
  /// The new file could not be created, written or made durable (why).
  case cannotWrite(String)
  /// The copy failed on the way (why): the source or the new file could not be read or written.
  case failedCopy(String)
  /// The source held other bytes than the content's hash says.
  case otherBytes
}
