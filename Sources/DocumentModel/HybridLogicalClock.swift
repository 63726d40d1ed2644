/// A hybrid logical time: wall-clock milliseconds, then a counter for events in one millisecond.
public struct HLCTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let wallMilliseconds: UInt64
  public let counter: UInt32

  public init(wallMilliseconds: UInt64, counter: UInt32 = 0) {
    self.wallMilliseconds = wallMilliseconds
    self.counter = counter
  }

  public static let zero = HLCTimestamp(wallMilliseconds: 0)

  /// The latest wall time a timestamp may carry: its nanoseconds still fit in an `Int64` (a
  /// file time), which ends in April 2262. Records beyond it are refused (``RecordCheck``).
  public static let maximumWallMilliseconds = UInt64(Int64.max / 1_000_000)

  /// The wall time in nanoseconds since the epoch, as a file's time; never traps.
  public var nanosecondsSinceEpoch: Int64 {
    Int64(min(wallMilliseconds, Self.maximumWallMilliseconds)) * 1_000_000
  }

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
  ///
  /// Never traps: a full counter moves to the next millisecond, and a wall clock past
  /// ``HLCTimestamp/maximumWallMilliseconds`` counts as that limit (where the clock then stops,
  /// 4 billion events into the last millisecond of 2262).
  public mutating func tick(now: UInt64) -> HLCTimestamp {
    let wall = min(now, HLCTimestamp.maximumWallMilliseconds)
    if wall > latest.wallMilliseconds {
      latest = HLCTimestamp(wallMilliseconds: wall)
    } else if latest.counter < UInt32.max {
      latest = HLCTimestamp(wallMilliseconds: latest.wallMilliseconds, counter: latest.counter + 1)
    } else if latest.wallMilliseconds < HLCTimestamp.maximumWallMilliseconds {
      latest = HLCTimestamp(wallMilliseconds: latest.wallMilliseconds + 1)
    }
    return latest
  }

  /// A message from another device: the returned time is later than both `remote` and
  /// everything this clock issued before.
  public mutating func receive(remote: HLCTimestamp, now: UInt64) -> HLCTimestamp {
    observe(remote)
    return tick(now: now)
  }

  /// Remembers `remote` without issuing a time, so that the next tick is later than it. A time
  /// past ``HLCTimestamp/maximumWallMilliseconds`` is not a time any record may carry: ignored.
  public mutating func observe(_ remote: HLCTimestamp) {
    if remote > latest && remote.wallMilliseconds <= HLCTimestamp.maximumWallMilliseconds {
      latest = remote
    }
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
