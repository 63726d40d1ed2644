/// What a hub found when it checked its own copy of a blob a device reported as damaged.
public enum BlobCondition: String, Sendable, Hashable {
  /// The hub's copy hashes to its key: the damage was on the way, and fetching again may work.
  case intact
  /// The hub's copy was damaged (now dropped) or is missing, and the hub waits for a device to
  /// put the blob again.
  case wanted
  /// The hub has no such blob and no record names it.
  case unknown
}
