/// Conversions of file times to docsync's one representation, nanoseconds since the epoch in an
/// `Int64`, that clamp instead of trapping.
///
/// The rule, for every time a program sets and every time a record carries: a time between
/// ``earliest`` (1677-09-21T00:12:43.145224192Z) and ``latest`` (2262-04-11T23:47:16.854775807Z)
/// is kept to the nanosecond; a time outside becomes the nearer of the two. The kernel hands a
/// FUSE file system any 64-bit second count (`touch -d 'year 2147483647'` arrives as it is),
/// and an `Int64` of nanoseconds is what the local store, version records (`contentTime`) and
/// the hybrid clock (``HLCTimestamp/nanosecondsSinceEpoch``) hold.
public enum EpochNanoseconds {
  public static let earliest = Int64.min
  public static let latest = Int64.max

  /// `seconds` and `nanoseconds` (a `timespec`'s fields, `nanoseconds` in 0..<1e9 or not) as
  /// nanoseconds since the epoch, clamped to ``earliest``...``latest``.
  public static func clamped(seconds: Int64, nanoseconds: Int64) -> Int64 {
    // In 128 bits: -9223372037 s and 854775808 ns is in range though its seconds alone are not.
    Int64(clamping: Int128(seconds) * 1_000_000_000 + Int128(nanoseconds))
  }

  /// Whole seconds and the nanoseconds within them (0..<1e9), as a `timespec` holds them.
  public static func split(_ value: Int64) -> (seconds: Int64, nanoseconds: Int64) {
    // The remainder is taken directly: `value - seconds * 1e9` would overflow at Int64.min.
    let remainder = value % 1_000_000_000
    return remainder < 0
      ? (value / 1_000_000_000 - 1, remainder + 1_000_000_000)
      : (value / 1_000_000_000, remainder)
  }

  /// Milliseconds since the epoch as a hybrid clock counts them: a time before 1970 counts as
  /// the epoch itself (the clock never goes below it).
  public static func wallMilliseconds(_ value: Int64) -> UInt64 {
    value <= 0 ? 0 : UInt64(value / 1_000_000)
  }

  /// A hybrid clock's wall milliseconds as nanoseconds, clamped to ``latest``.
  public static func from(wallMilliseconds: UInt64) -> Int64 {
    wallMilliseconds > UInt64(latest / 1_000_000)
      ? latest : Int64(wallMilliseconds) * 1_000_000
  }
}
