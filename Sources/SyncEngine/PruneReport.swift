/// What one prune let go: the earlier versions whose content it released (on the hub and
/// here; their records stay) and the local content files and bytes that went with them.
public struct PruneReport: Sendable, Equatable {
  public var policy: String
  public var versions: Int
  public var blobs: Int
  public var bytes: UInt64

  public init(policy: String, versions: Int = 0, blobs: Int = 0, bytes: UInt64 = 0) {
    self.policy = policy
    self.versions = versions
    self.blobs = blobs
    self.bytes = bytes
  }
}
