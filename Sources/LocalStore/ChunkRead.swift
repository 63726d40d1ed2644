/// What reading one chunk of local content gives.
public enum ChunkRead: Equatable, Sendable {
  /// The chunk's bytes, checked against its id.
  case bytes([UInt8])
  /// Other bytes: the file is damaged, or changed since its chunks were listed.
  case otherBytes
  /// The read failed (a failing disk); the file may read again.
  case unreadable
}
