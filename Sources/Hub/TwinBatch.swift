/// What one batch of blob conversions did (see ``SQLiteHub/convertBlobs(after:limit:)``).
public struct TwinBatch: Sendable, Hashable {
  /// Blobs exchanged for their twins.
  public var converted = 0
  /// Their bytes.
  public var bytes: Int64 = 0
  /// Blobs that read damaged here: left to the damage path, not converted.
  public var damaged = 0
  /// Blobs that changed under the conversion (pruned, put again): left for a later run.
  public var skipped = 0
  /// The hash to go on after; nil when this batch was the last.
  public var next: [UInt8]?

  public init(next: [UInt8]?) {
    self.next = next
  }
}
