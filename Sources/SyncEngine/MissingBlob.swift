/// A blob the engine is fetching again (missing, or found damaged): when to try next, how long
/// to wait after that, and why it is not here, for `docsync status`.
struct MissingBlob: Sendable {
  /// Monotonic milliseconds.
  var retryAt: UInt64
  /// Milliseconds; doubles after each failed try, up to a minute.
  var backoff: UInt64
  var reason: ContentWait
  /// The hub listed the blob as wanted when this device reported it: once the list no longer
  /// has it, a device has put it again, and it is fetched at once rather than at `retryAt`.
  var hubWants = false

  /// Takes what the latest try found. A blob the hub dropped as damaged is missing there on
  /// the next try, still wanted: it stays "damaged on the hub", which says more.
  mutating func note(_ newReason: ContentWait, hubWants wanted: Bool) {
    hubWants = wanted
    if reason == .damagedOnHub && newReason == .missingOnHub && wanted { return }
    reason = newReason
  }
}
