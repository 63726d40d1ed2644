/// How long a library keeps the earlier versions of its documents: one setting for the whole
/// library, kept on the hub so that every device applies the same.
///
/// Retention only ever lets go of earlier versions (those some known version follows): never a
/// head, so never the current version or a conflict version, and pruning changes no winner.
public enum RetentionPolicy: Hashable, Sendable, CustomStringConvertible {
  /// Syncthing's staggered versioning, bounded: for the first hour one version per 30 seconds,
  /// for the first day one per hour, then one per day up to 30 days; older ones go.
  case staggered
  /// Every earlier version younger than this many milliseconds; 0 keeps none.
  case keep(milliseconds: UInt64)

  /// The default of a library whose hub holds no setting.
  public static let `default` = RetentionPolicy.staggered
  static let second: UInt64 = 1000
  static let hour: UInt64 = 3_600_000
  static let day: UInt64 = 86_400_000
  /// How long `staggered` keeps anything.
  public static let staggeredLimitMilliseconds: UInt64 = 30 * day

  /// `staggered` or `keep <milliseconds>`: how the hub stores it.
  public var serialized: String {
    switch self {
    case .staggered: "staggered"
    case .keep(let milliseconds): "keep \(milliseconds)"
    }
  }

  public init?(serialized: String) {
    if serialized == "staggered" {
      self = .staggered
      return
    }
    let words = serialized.split(separator: " ")
    guard words.count == 2, words[0] == "keep", let milliseconds = UInt64(words[1]) else {
      return nil
    }
    self = .keep(milliseconds: milliseconds)
  }

  public var description: String {
    switch self {
    case .staggered:
      "staggered (every 30 s for an hour, hourly for a day, daily up to 30 days)"
    case .keep(0): "keep no earlier version"
    case .keep(let milliseconds): "keep earlier versions for \(Self.duration(milliseconds))"
    }
  }

  /// `90s`, `2h`, `30d`: the largest whole unit.
  public static func duration(_ milliseconds: UInt64) -> String {
    if milliseconds % day == 0 { return "\(milliseconds / day)d" }
    if milliseconds % hour == 0 { return "\(milliseconds / hour)h" }
    if milliseconds % 60_000 == 0 { return "\(milliseconds / 60_000)m" }
    if milliseconds % second == 0 { return "\(milliseconds / second)s" }
    return "\(milliseconds)ms"
  }

  /// Parses `0`, `90s`, `15m`, `12h`, `30d`, `2w`; nil for anything else.
  public static func milliseconds(parsing text: String) -> UInt64? {
    if text == "0" { return 0 }
    let units: [Character: UInt64] = [
      "s": second, "m": 60_000, "h": hour, "d": day, "w": 7 * day,
    ]
    guard let unit = text.last, let scale = units[unit], let count = UInt64(text.dropLast())
    else { return nil }
    let (product, overflow) = count.multipliedReportingOverflow(by: scale)
    return overflow ? nil : product
  }

  /// Of one document's earlier versions, those this policy lets go at `now` (wall-clock
  /// milliseconds). The same versions and time give the same answer on every device.
  public func released(_ earlier: [VersionRecord], now: UInt64) -> [VersionRecord] {
    func age(_ record: VersionRecord) -> UInt64 {
      now > record.modified.wallMilliseconds ? now - record.modified.wallMilliseconds : 0
    }
    switch self {
    case .keep(let limit):
      return earlier.filter { limit == 0 || age($0) >= limit }
    case .staggered:
      // Newest first: a version stays when it is far enough from the last one kept after it
      // for the interval of its age band (Syncthing's rule).
      let newestFirst = earlier.sorted { ($0.modified, $0.id) > ($1.modified, $1.id) }
      var released: [VersionRecord] = []
      var lastKept: UInt64?
      for record in newestFirst {
        let recordAge = age(record)
        let interval: UInt64
        if recordAge >= Self.staggeredLimitMilliseconds {
          released.append(record)
          continue
        } else if recordAge >= Self.day {
          interval = Self.day
        } else if recordAge >= Self.hour {
          interval = Self.hour
        } else {
          interval = 30 * Self.second
        }
        let time = record.modified.wallMilliseconds
        if let lastKept, lastKept >= time, lastKept - time < interval {
          released.append(record)
        } else {
          lastKept = time
        }
      }
      return released
    }
  }
}
