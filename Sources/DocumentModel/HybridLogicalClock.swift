/// A hybrid logical time: wall-clock milliseconds, then a counter for events in one millisecond.
public struct HLCTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let wallMilliseconds: UInt64
  public let counter: UInt32

  public init(wallMilliseconds: UInt64, counter: UInt32 = 0) {
    self.wallMilliseconds = wallMilliseconds
    self.counter = counter
  }

  public static let zero = HLCTimestamp(wallMilliseconds: 0)

  public var description: String { "\(wallMilliseconds).\(counter)" }

  public static func < (lhs: HLCTimestamp, rhs: HLCTimestamp) -> Bool {
    (lhs.wallMilliseconds, lhs.counter) < (rhs.wallMilliseconds, rhs.counter)
  }
}

/// One device's hybrid logical clock.
///
/// Versions take their modification time from it, so a version made on a device whose wall
/// clock is hours behind is still later than every version it was made from: the winner rule
/// ("later modification time wins") then never lets an older parent beat its own edit.
public struct HybridLogicalClock: Sendable {
  /// The greatest time this clock has issued or seen.
  public private(set) var latest: HLCTimestamp

  public init(latest: HLCTimestamp = .zero) {
    self.latest = latest
  }

  /// A new local event: later than everything seen, and at least the wall clock when it is ahead.
  public mutating func tick(now: UInt64) -> HLCTimestamp {
    if now > latest.wallMilliseconds {
      latest = HLCTimestamp(wallMilliseconds: now)
    } else {
      latest = HLCTimestamp(wallMilliseconds: latest.wallMilliseconds, counter: latest.counter + 1)
    }
    return latest
  }

  /// A message from another device: the returned time is later than both `remote` and
  /// everything this clock issued before.
  public mutating func receive(remote: HLCTimestamp, now: UInt64) -> HLCTimestamp {
    observe(remote)
    return tick(now: now)
  }

  /// Remembers `remote` without issuing a time, so that the next tick is later than it.
  public mutating func observe(_ remote: HLCTimestamp) {
    if remote > latest { latest = remote }
  }
}

extension HLCTimestamp {
  /// UTC `YYYY-MM-DDTHH.MM.SSZ`, the time part of a `.versions` name.
  public var versionsTimeString: String { utcString(timeSeparator: ".") }

  /// UTC `YYYY-MM-DDTHH:MM:SSZ` (ISO 8601), for people and scripts.
  public var isoString: String { utcString(timeSeparator: ":") }

  private func utcString(timeSeparator sep: String) -> String {
    let seconds = Int64(wallMilliseconds / 1000)
    let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let secondOfDay = seconds - days * 86_400
    let (year, month, day) = Self.civil(fromDays: days)
    func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let yearText = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
    return
      "\(yearText)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600))\(sep)\(two(secondOfDay / 60 % 60))\(sep)\(two(secondOfDay % 60))Z"
  }

  // Howard Hinnant's days-to-civil algorithm: exact for the proleptic Gregorian calendar,
  // and keeps DocumentModel free of Foundation's formatters.
  static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }
}
