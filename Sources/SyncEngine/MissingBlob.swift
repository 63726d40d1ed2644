/// A blob the engine is fetching again (missing, or found damaged): when to try next, how long
/// to wait after that, and why it is not here, for `docsync status`.
struct MissingBlob: Sendable {
  /// Monotonic milliseconds.
  var retryAt: UInt64
  /// Milliseconds; doubles after each failed try, up to a minute.
  var backoff: UInt64
  var reason: ContentWait
  /// What the hub listed as wanted when this device found it missing there: the blob's hash,
  /// or the id of a chunk or tree node of its content. Once the list no longer has it, a
  /// device has put it again, and the content is fetched at once rather than at `retryAt`.
  var awaited: [UInt8]? = nil

  /// Takes what the latest try found. A blob the hub dropped as damaged is missing there on
  /// the next try, still wanted: it stays "damaged on the hub", which says more.
  mutating func note(_ newReason: ContentWait, awaiting wanted: [UInt8]?) {
    awaited = wanted
    if reason == .damagedOnHub && newReason == .missingOnHub && wanted != nil { return }
    reason = newReason
  }
}
