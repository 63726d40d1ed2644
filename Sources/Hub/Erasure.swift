/// One record a hub let go of: its content released by retention, or the whole record
/// forgotten. Named by the record's id alone, so that a hub that forgot a document keeps no
/// trace of its name or content.
public struct Erasure: Sendable, Hashable {
  /// What went.
  public enum Kind: Sendable, Hashable {
    /// The record stays; its content went (``Hub/prune(records:)``).
    case released
    /// The record and its content went (``Hub/forget(records:)``).
    case forgotten
  }

  /// The id of the record, as in ``HubRecord/id``.
  public var id: [UInt8]
  public var kind: Kind

  public init(id: [UInt8], kind: Kind) {
    self.id = id
    self.kind = kind
  }
}
