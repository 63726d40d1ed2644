/// The checks a record from another device passes before this device stores or applies it,
/// beyond its id (``Integrity``): every field must be one that some device could have made and
/// that this device can use without trapping or misbehaving.
///
/// The time bound: a record's modification time may lead this device's wall clock, or its
/// newest known parent or rename origin when that is later, by at most
/// ``maximumLeadMilliseconds`` (a day). A device whose clock is hours off (a wrong time zone
/// included) still syncs; a clock years ahead (a bad battery, a typo) can neither win every
/// conflict with it nor drag every device's hybrid clock along. A record must also be later
/// than each known parent and origin, as a hybrid clock makes it.
public enum RecordCheck {
  /// Linux's `NAME_MAX`.
  public static let maximumComponentBytes = 255
  /// Linux's `PATH_MAX` less its terminating NUL.
  public static let maximumPathBytes = 4095
  /// A petabyte: beyond any file system's documents, and small enough that no sum of a page of
  /// sizes overflows.
  public static let maximumFileSize: UInt64 = 1 << 50
  /// A symlink's target is a path.
  public static let maximumSymlinkSize = UInt64(maximumPathBytes)
  public static let maximumDeviceNameBytes = 255
  /// How far ahead of the local clock a record's time may be: a day.
  public static let maximumLeadMilliseconds: UInt64 = 86_400_000

  /// The problem with `record`, or nil when it may be used. `now` is this device's wall clock
  /// (milliseconds since the epoch); `knownTime` gives the time of a version this device has.
  public static func problem(
    with record: VersionRecord, now: UInt64, knownTime: (VersionID) -> HLCTimestamp?
  ) -> RecordProblem? {
    if let problem = structuralProblem(with: record) { return problem }
    var causes = record.parents.compactMap { parent in knownTime(parent).map { (parent, $0) } }
    if let origin = record.origin, let time = knownTime(origin.version) {
      causes.append((origin.version, time))
    }
    if let (parent, _) = causes.first(where: { $0.1 >= record.modified }) {
      return .notLaterThanParent(parent)
    }
    let reference = causes.map(\.1.wallMilliseconds).reduce(now, max)
    let limit = reference.addingReportingOverflow(maximumLeadMilliseconds)
    if !limit.overflow && record.modified.wallMilliseconds > limit.partialValue {
      return .timeTooFarAhead(record.modified, lead: record.modified.wallMilliseconds - now)
    }
    return nil
  }

  /// The problems that do not depend on this device's clock or versions: also checked on the
  /// records loaded at start, which an earlier docsync may have accepted unchecked.
  public static func structuralProblem(with record: VersionRecord) -> RecordProblem? {
    if let problem = problem(with: record.path) { return problem }
    if let origin = record.origin, let problem = problem(with: origin.path) {
      return .originPath(problem)
    }
    switch record.content {
    case .file(_, let size, _) where size > maximumFileSize: return .sizeTooLarge(size)
    case .symlink(_, let size) where size > maximumSymlinkSize: return .sizeTooLarge(size)
    case .directory, .deletion:
      if record.contentTime != nil { return .contentTimeWithoutContent }
    default: break
    }
    if let chunks = record.chunks, let problem = problem(with: chunks, of: record.content) {
      return problem
    }
    for (earlier, later) in zip(record.parents, record.parents.dropFirst()) where earlier >= later {
      return .parentsNotCanonical
    }
    let name = record.deviceName.utf8
    if name.count > maximumDeviceNameBytes || name.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
      return .badDeviceName
    }
    if record.modified.wallMilliseconds > HLCTimestamp.maximumWallMilliseconds {
      return .timeOutOfRange(record.modified)
    }
    return nil
  }

  /// The problem with a record's chunk root: only a file's content moves as chunks, the root
  /// covers exactly its bytes, and no tree is higher than a device makes or holds nothing.
  static func problem(with chunks: ContentRoot, of content: VersionContent) -> RecordProblem? {
    guard case .file(_, let size, _) = content else { return .chunksWithoutFile }
    guard chunks.size == size, chunks.height <= ContentRoot.maximumHeight,
      chunks.height == 0 || size > 0
    else { return .chunksDoNotFit(chunks) }
    return nil
  }

  /// The problem with a path that a record names, or nil.
  public static func problem(with path: DocumentPath) -> RecordProblem? {
    guard let first = path.components.first else { return .rootPath }
    var total = path.components.count - 1
    for component in path.components {
      if component.isEmpty || component == [0x2E] || component == [0x2E, 0x2E]
        || component.contains(0) || component.contains(0x2F)
      {
        return .badComponent(component)
      }
      if component.count > maximumComponentBytes { return .componentTooLong(component.count) }
      total += component.count
    }
    if total > maximumPathBytes { return .pathTooLong(total) }
    if first == IgnoredNames.versionsFolder || first == IgnoredNames.historyFolder {
      return .reservedPath
    }
    return nil
  }

  /// Bytes from another device as one quoted line for a log: printable ASCII as is, anything
  /// else as `\xNN`, cut after `limit` bytes.
  public static func printable(_ bytes: some Collection<UInt8>, limit: Int = 80) -> String {
    var text = "\""
    for byte in bytes.prefix(limit) {
      switch byte {
      case 0x22, 0x5C: text += "\\" + String(UnicodeScalar(byte))
      case 0x20..<0x7F: text.append(Character(UnicodeScalar(byte)))
      default:
        let hex = String(byte, radix: 16)
        text += "\\x" + (hex.count == 1 ? "0" + hex : hex)
      }
    }
    return text + (bytes.count > limit ? "\"…" : "\"")
  }

  /// `45 min`, `26 h`, `3 days`: a lead as a person reads it.
  static func duration(_ milliseconds: UInt64) -> String {
    let minutes = milliseconds / 60_000
    if minutes < 60 { return "\(minutes) min" }
    if minutes < 72 * 60 { return "\(minutes / 60) h" }
    return "\(minutes / 1440) days"
  }
}
