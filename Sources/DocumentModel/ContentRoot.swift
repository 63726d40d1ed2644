/// Where a version's content lives as chunks: the root object of its manifest tree (or, at
/// height 0, the one chunk that holds all of it), the tree's height and the content's size.
///
/// A record that names one moves its content as objects (docs/content-layer.md); one that
/// does not moves it as a whole-file blob, as every record did before chunks.
public struct ContentRoot: Hashable, Sendable {
  public let id: Digest256
  public let height: UInt8
  public let size: UInt64
  /// The hash that names the root and every object under it.
  public let scheme: ObjectIDScheme

  public init(id: Digest256, height: UInt8, size: UInt64, scheme: ObjectIDScheme) {
    self.id = id
    self.height = height
    self.size = size
    self.scheme = scheme
  }

  /// The highest tree a record may claim, as ContentModel's decoder allows (a device makes
  /// four levels for a petabyte).
  public static let maximumHeight: UInt8 = 16
}
