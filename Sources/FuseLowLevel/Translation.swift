import CFuse
import Glibc
import SystemPackage

// Pure translations between libfuse's C values and the protocol's Swift values, kept apart from
// the callbacks so that tests can check them without a kernel.

/// What setattr's `to_set` bits and `struct stat` ask for, in the protocol's terms.
func attributeChanges(valid: Int32, attributes: stat, handle: UInt64?) -> AttributeChanges {
  func has(_ bit: Int32) -> Bool { valid & bit != 0 }
  var changes = AttributeChanges(handle: handle)
  if has(FUSE_SET_ATTR_MODE) { changes.mode = attributes.st_mode }
  if has(FUSE_SET_ATTR_UID) { changes.uid = attributes.st_uid }
  if has(FUSE_SET_ATTR_GID) { changes.gid = attributes.st_gid }
  if has(FUSE_SET_ATTR_SIZE) { changes.size = attributes.st_size }
  // libfuse 3.14 passes the kernel's FATTR_KILL_SUIDGID (1 << 11) on under this name.
  if has(FUSE_SET_ATTR_KILL_SUID) { changes.clearSetID = true }
  // The kernel sends ATIME together with ATIME_NOW for utimensat(UTIME_NOW); NOW wins because
  // the time in `attributes` is then meaningless (fuse_lowlevel.c only copies it without NOW).
  if has(FUSE_SET_ATTR_ATIME_NOW) {
    changes.accessTime = .now
  } else if has(FUSE_SET_ATTR_ATIME) {
    changes.accessTime = .time(attributes.st_atim)
  }
  if has(FUSE_SET_ATTR_MTIME_NOW) {
    changes.modificationTime = .now
  } else if has(FUSE_SET_ATTR_MTIME) {
    changes.modificationTime = .time(attributes.st_mtim)
  }
  return changes
}

/// The reply to getxattr or listxattr for a caller's buffer of `requestedSize` bytes.
enum ExtendedAttributeReply: Equatable {
  /// A size query (size 0): how many bytes the value needs.
  case size(Int)
  case bytes([UInt8])
  case error(Errno)
}

/// getxattr(2) and listxattr(2) ask with size 0 for the size, and fail with ERANGE when the
/// buffer is too small; the file system only returns the whole value.
func extendedAttributeReply(value: [UInt8], requestedSize: Int) -> ExtendedAttributeReply {
  if requestedSize == 0 { return .size(value.count) }
  if value.count > requestedSize { return .error(.outOfRange) }
  return .bytes(value)
}

/// listxattr's format: every name followed by a NUL, the last one included.
func joinedAttributeNames(_ names: [[UInt8]]) -> [UInt8] {
  var joined: [UInt8] = []
  joined.reserveCapacity(names.reduce(0) { $0 + $1.count + 1 })
  for name in names {
    joined.append(contentsOf: name)
    joined.append(0)
  }
  return joined
}

/// The kernel's view of an `Entry`.
func entryParameter(_ entry: Entry) -> fuse_entry_param {
  var parameter = fuse_entry_param()
  parameter.ino = fuse_ino_t(entry.attributes.st_ino)
  parameter.generation = entry.generation
  parameter.attr = entry.attributes
  parameter.attr_timeout = entry.attributeTimeout
  parameter.entry_timeout = entry.entryTimeout
  return parameter
}

/// A readdir or readdirplus reply being filled, no larger than the size the kernel asked for.
struct DirectoryBuffer {
  private(set) var bytes: [UInt8]
  private(set) var used = 0
  let plus: Bool

  init(capacity: Int, plus: Bool) {
    bytes = [UInt8](repeating: 0, count: capacity)
    self.plus = plus
  }

  /// Packs `entry` if it fits; false when it does not, so that the file system stops and does
  /// not count a lookup for an entry the kernel never receives.
  ///
  /// `request` is only passed through: libfuse 3.14's fuse_add_direntry(_plus) ignores it.
  mutating func append(_ entry: DirectoryEntry, request: fuse_req_t?) -> Bool {
    var name = entry.name
    name.append(0)
    let remaining = bytes.count - used
    let offset = used
    let plus = self.plus
    let written = bytes.withUnsafeMutableBufferPointer { buffer in
      name.withUnsafeBufferPointer { nameBytes in
        let target = UnsafeMutableRawPointer(buffer.baseAddress!).advanced(by: offset)
          .assumingMemoryBound(to: CChar.self)
        let namePointer = UnsafeRawPointer(nameBytes.baseAddress!).assumingMemoryBound(
          to: CChar.self)
        if plus {
          // Without an `entry` the ino of 0 tells the kernel to cache nothing for this name
          // (fuse_direntplus_link skips nodeid 0), so no lookup is counted for it.
          var parameter = fuse_entry_param()
          if let full = entry.entry {
            parameter = entryParameter(full)
          } else {
            parameter.attr = entry.attributes
          }
          return fuse_add_direntry_plus(
            request, target, remaining, namePointer, &parameter, off_t(entry.nextOffset))
        } else {
          var attributes = entry.attributes
          return fuse_add_direntry(
            request, target, remaining, namePointer, &attributes, off_t(entry.nextOffset))
        }
      }
    }
    // libfuse returns the size the entry needs and writes nothing when it exceeds `remaining`.
    guard written <= remaining else { return false }
    used += written
    return true
  }
}

extension SessionOptions {
  /// The argument vector for fuse_session_new; argv[0] is a program name libfuse skips.
  public var arguments: [String] {
    var mountOptions = [
      "fsname=\(Self.escapedOption(fsName))",
      "subtype=\(Self.escapedOption(subtype))",
    ]
    // The kernel checks modes itself, so the file system need not repeat access checks.
    if checksModes { mountOptions.append("default_permissions") }
    if allowOther { mountOptions.append("allow_other") }
    var arguments = ["docsync", "-o", mountOptions.joined(separator: ",")]
    if debug { arguments.append("-d") }
    return arguments
  }

  /// fuse_opt splits `-o` values at commas and takes a backslash to escape the next character.
  static func escapedOption(_ value: String) -> String {
    var escaped = ""
    for character in value {
      if character == "," || character == "\\" { escaped.append("\\") }
      escaped.append(character)
    }
    return escaped
  }
}
