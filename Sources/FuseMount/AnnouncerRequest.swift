/// One call that the announcing process makes through the mount for the daemon, as it travels
/// over their socket: one packet each way, the request and then the errno it ended with (0 for
/// success).
struct AnnouncerRequest: Equatable {
  enum Operation: UInt8 {
    /// open(O_CREAT | O_EXCL | O_WRONLY), then close.
    case createFile = 1
    case makeDirectory, makeSymlink, unlink, removeDirectory
    /// open(O_WRONLY), ftruncate to `value`, close.
    case truncate
    /// fchmodat to `value`.
    case changeMode
  }

  var operation: Operation
  /// The size of a truncate, the mode of a chmod; 0 otherwise.
  var value: Int64
  /// The folder the call is made in, as an absolute path; bytes, not necessarily UTF-8.
  var folder: [UInt8]
  var name: [UInt8]

  /// The largest packet: a path of PATH_MAX and a name of NAME_MAX, with the header.
  static let maximumSize = headerSize + 4096 + 256
  private static let headerSize = 1 + 8 + 4 + 4

  var encoded: [UInt8] {
    var bytes = [operation.rawValue]
    withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    withUnsafeBytes(of: UInt32(folder.count).littleEndian) { bytes += $0 }
    withUnsafeBytes(of: UInt32(name.count).littleEndian) { bytes += $0 }
    return bytes + folder + name
  }

  init(_ operation: Operation, value: Int64 = 0, folder: [UInt8], name: [UInt8]) {
    self.operation = operation
    self.value = value
    self.folder = folder
    self.name = name
  }

  /// The request a packet holds; nil for one that is cut short or names no operation.
  init?(decoding bytes: [UInt8]) {
    guard bytes.count >= Self.headerSize, let operation = Operation(rawValue: bytes[0]) else {
      return nil
    }
    func integer<T: FixedWidthInteger>(at offset: Int, as: T.Type) -> T {
      var result: T = 0
      for index in 0..<MemoryLayout<T>.size {
        result |= T(truncatingIfNeeded: bytes[offset + index]) << (8 * index)
      }
      return result
    }
    let value = integer(at: 1, as: Int64.self)
    let folderCount = Int(integer(at: 9, as: UInt32.self))
    let nameCount = Int(integer(at: 13, as: UInt32.self))
    guard bytes.count == Self.headerSize + folderCount + nameCount else { return nil }
    let folderEnd = Self.headerSize + folderCount
    self.init(
      operation, value: value, folder: Array(bytes[Self.headerSize..<folderEnd]),
      name: Array(bytes[folderEnd...]))
  }
}
