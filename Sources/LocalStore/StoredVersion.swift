/// A version record as the store keeps it: its encoding, and beside it what the store indexes
/// so that older records stay on disk and are found without decoding them all: the path, the
/// parents, whether it is a file or symlink version, and its content's blob.
public struct StoredVersion: Sendable, Equatable {
  public var id: [UInt8]
  public var payload: [UInt8]
  public var path: [UInt8]
  public var parents: [[UInt8]]
  /// A file or symlink version: one `.history` may list.
  public var isDocument: Bool
  public var contentHash: [UInt8]?

  public init(
    id: [UInt8], payload: [UInt8], path: [UInt8], parents: [[UInt8]], isDocument: Bool,
    contentHash: [UInt8]?
  ) {
    self.id = id
    self.payload = payload
    self.path = path
    self.parents = parents
    self.isDocument = isDocument
    self.contentHash = contentHash
  }
}
