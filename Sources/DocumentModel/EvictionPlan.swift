/// What a device gives back to stay within its local budget, decided by
/// ``LocalBudget/plan(_:)``: the contents to evict, least recently used first, and whether
/// that is enough.
public struct EvictionPlan: Sendable, Hashable {
  /// The keys to evict, in order.
  public let evict: [String]
  /// Bytes held after the evictions.
  public let bytesAfter: UInt64
  /// Bytes still above the budget's low mark because everything left is pinned, open or
  /// unsynced: the device says so (status, an event) rather than break a promise.
  public let shortfall: UInt64

  public init(evict: [String], bytesAfter: UInt64, shortfall: UInt64) {
    self.evict = evict
    self.bytesAfter = bytesAfter
    self.shortfall = shortfall
  }

  public static let nothing = EvictionPlan(evict: [], bytesAfter: 0, shortfall: 0)
}
