/// Why a record from another device is refused although its id matches its bytes: a field that
/// no device makes, or that this device cannot use safely (see ``RecordCheck``).
public enum RecordProblem: Error, Hashable, Sendable, CustomStringConvertible {
  /// The record is for the root of the library, which has no versions.
  case rootPath
  /// A path component that is empty, `.`, `..`, or holds NUL or `/`.
  case badComponent([UInt8])
  /// A path component longer than a file name may be (bytes).
  case componentTooLong(Int)
  /// A path longer than a path may be (bytes, slashes included).
  case pathTooLong(Int)
  /// A path inside the reserved `.versions` folder at the root.
  case reservedPath
  /// The rename origin's path has the problem.
  indirect case originPath(RecordProblem)
  /// A content size no file or symlink can have.
  case sizeTooLarge(UInt64)
  /// Parents not strictly ascending (the canonical form sorts them and drops duplicates).
  case parentsNotCanonical
  /// A file time on a folder or a deletion, which have none.
  case contentTimeWithoutContent
  /// A device name that is too long (bytes) or holds control characters.
  case badDeviceName
  /// A modification time past ``HLCTimestamp/maximumWallMilliseconds``.
  case timeOutOfRange(HLCTimestamp)
  /// A modification time further ahead of this device's clock (and of the record's newest known
  /// parent) than ``RecordCheck/maximumLeadMilliseconds``; `lead` in milliseconds.
  case timeTooFarAhead(HLCTimestamp, lead: UInt64)
  /// A modification time not later than a known parent's, which a hybrid clock never issues.
  case notLaterThanParent(VersionID)
  /// Chunks named for a version that is not a file.
  case chunksWithoutFile
  /// A chunk root whose size is not the file's, or a tree no device makes.
  case chunksDoNotFit(ContentRoot)

  public var description: String {
    switch self {
    case .chunksWithoutFile: "chunks named for a version that is not a file"
    case .chunksDoNotFit(let root):
      "a chunk tree of height \(root.height) over \(root.size) bytes that does not fit its file"
    case .rootPath: "a version of the library's root"
    case .badComponent(let name): "path component \(RecordCheck.printable(name)) is not a name"
    case .componentTooLong(let bytes): "a path component of \(bytes) bytes (at most 255)"
    case .pathTooLong(let bytes):
      "a path of \(bytes) bytes (at most \(RecordCheck.maximumPathBytes))"
    case .reservedPath: "a path inside the reserved .versions or .history folder"
    case .originPath(let problem): "its rename origin has \(problem)"
    case .sizeTooLarge(let size): "a content size of \(size) bytes"
    case .parentsNotCanonical: "parents that are not sorted and distinct"
    case .contentTimeWithoutContent: "a file time on a folder or deletion"
    case .badDeviceName: "a device name that is too long or holds control characters"
    case .timeOutOfRange(let time):
      "modification time \(time.wallMilliseconds) ms is past the year 2262"
    case .timeTooFarAhead(let time, let lead):
      "modification time \(time.isoString) is \(RecordCheck.duration(lead)) ahead of this "
        + "device's clock and of its parents (at most "
        + "\(RecordCheck.duration(RecordCheck.maximumLeadMilliseconds)) is accepted)"
    case .notLaterThanParent(let parent):
      "modification time is not later than its parent \(parent.shortHex)'s"
    }
  }
}
