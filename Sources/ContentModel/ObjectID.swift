import DocumentModel

/// The id of a stored content object (a chunk or a manifest node): a BLAKE2b-256 of its plain
/// bytes, keyed by the library's ``ContentKeys``.
public struct ObjectID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let digest: Digest256

  public init(_ digest: Digest256) { self.digest = digest }

  /// Takes exactly 32 bytes; nil for any other length.
  public init?(bytes: some Collection<UInt8>) {
    guard let digest = Digest256(bytes: bytes) else { return nil }
    self.digest = digest
  }

  public var bytes: [UInt8] { digest.bytes }
  public var hex: String { digest.hex }
  public var description: String { hex }

  public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool { lhs.digest < rhs.digest }
}
