/// How a stored object's bytes are transformed, the first byte of every stored object.
///
/// Compression comes first, before anything else that transforms bytes; the high bit is kept
/// for sealed (encrypted and authenticated) frames, so that a device that does not know a
/// frame refuses it with an error that says to upgrade, rather than misreading it.
public enum ObjectFrame: UInt8, Sendable {
  /// The plain bytes follow.
  case raw = 0
  /// A zstd frame of the plain bytes follows, with the content size in its header.
  case zstd = 1
}
