/// How much content a device keeps (`docsync mount --local-limit`), with hysteresis: nothing is
/// evicted until the content held passes the limit, and then enough goes to come back under a
/// low mark, so that a device near its limit does not evict a file at every read.
///
/// The limit is also bounded by the disk: whatever was asked, the content held never grows
/// into the reserve a file system needs (``reserve(fileSystemBytes:)``), so a new device joining
/// a large library never fills its disk.
public struct LocalBudget: Sendable, Hashable {
  /// The limit asked for, in bytes; nil for the default (the disk's bound alone).
  public let limit: UInt64?
  /// The fraction of the limit evictions bring the content down to.
  public static let lowMarkFraction = 0.9
  /// What is left free on any file system, at least: evictions start before the disk fills.
  public static let minimumReserve: UInt64 = 2 << 30

  public init(limit: UInt64?) {
    self.limit = limit
  }

  /// The space kept free on a file system of `fileSystemBytes`: a tenth of it, at least
  /// ``minimumReserve`` and at most 50 GiB (a tenth of a large disk is more than needed).
  public static func reserve(fileSystemBytes: UInt64) -> UInt64 {
    min(max(fileSystemBytes / 10, minimumReserve), 50 << 30)
  }

  /// The limit in effect when the content held is `held` bytes and the file system has
  /// `available` bytes free of `fileSystemBytes`: the limit asked for, or less when the disk
  /// could not hold that much more while keeping its reserve.
  public func effectiveLimit(held: UInt64, available: UInt64, fileSystemBytes: UInt64) -> UInt64 {
    let reserve = Self.reserve(fileSystemBytes: fileSystemBytes)
    let disk = held + (available > reserve ? available - reserve : 0)
    guard let limit else { return disk }
    return min(limit, disk)
  }

  /// What to evict of `candidates` (every content held here) when the limit in effect is
  /// `limit`: nothing while the total is within it; past it, the least recently used
  /// evictable contents until the total is at the low mark.
  public static func plan(_ candidates: [EvictionCandidate], limit: UInt64) -> EvictionPlan {
    let held = candidates.reduce(UInt64(0)) { $0 + $1.bytes }
    guard held > limit else { return EvictionPlan(evict: [], bytesAfter: held, shortfall: 0) }
    let low = UInt64(Double(limit) * lowMarkFraction)
    var after = held
    var evict: [String] = []
    let order = candidates.filter(\.isEvictable).sorted {
      ($0.lastUsedMilliseconds, $1.bytes, $0.key) < ($1.lastUsedMilliseconds, $0.bytes, $1.key)
    }
    for candidate in order where after > low {
      guard candidate.bytes > 0 else { continue }
      evict.append(candidate.key)
      after -= candidate.bytes
    }
    return EvictionPlan(evict: evict, bytesAfter: after, shortfall: after > low ? after - low : 0)
  }
}
