import SystemPackage

/// A file system under test, addressed by paths relative to its root.
///
/// Paths are `/`-separated and relative to the subject's root; `""` is the root itself. A path
/// is a sequence of bytes carried in a `String` (`path.utf8`): NFC and NFD spellings of one
/// name are different names, so an implementation must never normalise or compare with `==`
/// on `String`. An in-process implementation resolves a path by walking its components with
/// lookup, one at a time: paths longer than `PATH_MAX` (4096 bytes) must work.
///
/// Every failure is thrown as `SystemPackage.Errno`, with the value a local Linux file system
/// would give. Methods that need a kernel (`mapRead`, `setLock`) have default implementations
/// that throw `.notSupported`; checks that use them require the matching ``SubjectCapabilities``.
public protocol FileSystemSubject: Sendable {
  /// What this subject can do beyond the operations every subject has.
  var capabilities: SubjectCapabilities { get }
  /// The user and group that operations run as: a new file belongs to them.
  var caller: Caller { get }

  // MARK: Attributes

  /// `stat` (`followSymlinks`) or `lstat` of `path`.
  func status(_ path: String, followSymlinks: Bool) throws -> FileStatus
  /// `fstat` of an open file (which may be unlinked already).
  func status(of file: OpenFile) throws -> FileStatus
  /// `fstat` of an open directory (which may be removed already).
  func status(of directory: OpenDirectory) throws -> FileStatus
  /// `chmod`: sets the permission bits (`0o7777`) of `path`, following symlinks.
  func setMode(_ path: String, _ mode: UInt32) throws
  /// `chown`: `nil` leaves the user or group unchanged. Follows symlinks.
  func setOwner(_ path: String, user: UInt32?, group: UInt32?) throws
  /// `utimensat` with `UTIME_NOW` (`.now`) and `UTIME_OMIT` (`.omit`), following symlinks.
  func setTimes(_ path: String, access: TimeUpdate, modification: TimeUpdate) throws
  /// `truncate`: sets the size of the regular file at `path`, filling with zeros when it grows.
  func truncate(_ path: String, size: Int64) throws
  /// `access`: an empty mode tests existence (`F_OK`). Throws `.permissionDenied` when refused.
  func access(_ path: String, _ mode: AccessMode) throws
  /// `statvfs` of the file system that holds `path`.
  func fileSystemStatus(_ path: String) throws -> FileSystemStatus

  // MARK: Directories

  /// `mkdir`.
  func makeDirectory(_ path: String, mode: UInt32) throws
  /// `rmdir`.
  func removeDirectory(_ path: String) throws
  /// `opendir`. Listing includes `.` and `..`.
  func openDirectory(_ path: String) throws -> OpenDirectory
  /// `readdir`: the next entries, at most `maximumCount`; an empty array at the end.
  ///
  /// Entries added or removed between two calls may or may not appear, but no other entry is
  /// lost or repeated (POSIX readdir).
  func readDirectory(_ directory: OpenDirectory, maximumCount: Int) throws -> [DirectoryEntry]
  /// `fsync` of an open directory (`fsyncdir` in FUSE).
  func synchronize(_ directory: OpenDirectory) throws
  /// `closedir` (`releasedir` in FUSE).
  func close(_ directory: OpenDirectory) throws

  // MARK: Files

  /// `open`, with `O_CREAT` when `options` contains `.create`; `mode` applies to a new file.
  func open(_ path: String, _ options: OpenOptions, mode: UInt32) throws -> OpenFile
  /// `pread`: at most `count` bytes at `offset`; fewer at the end of the file.
  func read(_ file: OpenFile, at offset: Int64, count: Int) throws -> [UInt8]
  /// `pwrite`: returns the number of bytes written. For a file opened with `.append`, the
  /// bytes go to the end of the file whatever `offset` says (as Linux `pwrite` does).
  func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws -> Int
  /// `fallocate` with FALLOC_FL_* `mode` bits (``AllocationMode``).
  func allocate(_ file: OpenFile, mode: Int32, offset: Int64, length: Int64) throws
  /// `ftruncate`.
  func truncate(_ file: OpenFile, size: Int64) throws
  /// `fsync` (or `fdatasync` when `dataOnly`).
  func synchronize(_ file: OpenFile, dataOnly: Bool) throws
  /// `close` (FUSE: `flush`, then `release`).
  func close(_ file: OpenFile) throws
  /// `unlink`.
  func removeFile(_ path: String) throws
  /// `renameat2` with flags (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`).
  func rename(_ source: String, to destination: String, flags: RenameFlags) throws

  // MARK: Links and special files

  /// `symlink`: creates a symbolic link at `path` whose content is `target` (not resolved).
  func makeSymbolicLink(_ path: String, target: String) throws
  /// `readlink`.
  func readSymbolicLink(_ path: String) throws -> String
  /// `link`: a second name `path` for the file at `existing`.
  func makeHardLink(_ path: String, to existing: String) throws
  /// `mknod`: `kind` is `.fifo`, `.characterDevice`, `.blockDevice` or `.socket`.
  func makeNode(_ path: String, kind: FileKind, mode: UInt32, device: UInt64) throws

  // MARK: Extended attributes (follow symlinks)

  /// `getxattr` with size 0: the size of the value.
  func extendedAttributeSize(_ path: String, name: String) throws -> Int
  /// `getxattr` with a buffer of `capacity` bytes: `.outOfRange` (ERANGE) when too small.
  func getExtendedAttribute(_ path: String, name: String, capacity: Int) throws -> [UInt8]
  /// `setxattr`.
  func setExtendedAttribute(
    _ path: String, name: String, value: [UInt8], flags: ExtendedAttributeFlags) throws
  /// `listxattr`: every name, in any order.
  func listExtendedAttributes(_ path: String) throws -> [String]
  /// `removexattr`.
  func removeExtendedAttribute(_ path: String, name: String) throws

  // MARK: Kernel-only (capabilities)

  /// Reads `count` bytes at `offset` through a shared memory mapping (`.mmap`). The range lies
  /// within the file.
  func mapRead(_ file: OpenFile, at offset: Int64, count: Int) throws -> [UInt8]
  /// Writes through a shared memory mapping, then `msync`s (`.mmap`). The range lies within the
  /// file: callers grow the file first.
  func mapWrite(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws
  /// Takes or releases a lock without waiting (`.locks`); a conflict throws
  /// `.resourceTemporarilyUnavailable` (or `.permissionDenied` for `F_SETLK`).
  func setLock(_ file: OpenFile, _ lock: FileLock) throws
}

extension FileSystemSubject {
  /// Throws `.notSupported`: only kernel-backed subjects map files.
  public func mapRead(_ file: OpenFile, at offset: Int64, count: Int) throws -> [UInt8] {
    throw Errno.notSupported
  }
  /// Throws `.notSupported`: only kernel-backed subjects map files.
  public func mapWrite(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws {
    throw Errno.notSupported
  }
  /// Throws `.notSupported`: only subjects with `.locks` lock.
  public func setLock(_ file: OpenFile, _ lock: FileLock) throws {
    throw Errno.notSupported
  }
}

/// What a subject supports beyond the common operations; checks declare what they require.
public struct SubjectCapabilities: OptionSet, Sendable, Hashable, CustomStringConvertible {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  /// `mapRead` and `mapWrite` work (a kernel page cache is behind the subject).
  public static let mmap = SubjectCapabilities(rawValue: 1 << 0)
  /// `setLock` works: POSIX record locks, OFD locks and `flock`.
  public static let locks = SubjectCapabilities(rawValue: 1 << 1)
  /// `makeNode` can create character and block devices (root, no `nodev` restriction).
  public static let deviceNodes = SubjectCapabilities(rawValue: 1 << 2)
  /// `setOwner` may give a file to any user and group (the caller is privileged).
  public static let changeOwner = SubjectCapabilities(rawValue: 1 << 3)
  /// The subject root is the root of a docsync mount: `.versions` is reserved there.
  public static let docsyncRoot = SubjectCapabilities(rawValue: 1 << 4)
  /// The caller's own modes bind it (it is not root): a file without write permission cannot
  /// be written, a folder without search permission cannot be walked.
  public static let permissionChecks = SubjectCapabilities(rawValue: 1 << 5)

  static let names: [(SubjectCapabilities, String)] = [
    (.mmap, "mmap"), (.locks, "locks"), (.deviceNodes, "deviceNodes"),
    (.changeOwner, "changeOwner"), (.docsyncRoot, "docsyncRoot"),
    (.permissionChecks, "permissionChecks"),
  ]

  public var description: String {
    let parts = Self.names.filter { contains($0.0) }.map(\.1)
    return "[" + parts.joined(separator: ", ") + "]"
  }
}

/// The identity that a subject's operations run as.
public struct Caller: Sendable, Hashable {
  public var user: UInt32
  public var group: UInt32
  public init(user: UInt32, group: UInt32) {
    self.user = user
    self.group = group
  }
}

/// The type of a file, from the `S_IFMT` bits.
public enum FileKind: Sendable, Hashable {
  case regular, directory, symbolicLink, fifo, characterDevice, blockDevice, socket

  /// The kind named by the `S_IFMT` bits of `mode`, or `nil`.
  public init?(mode: UInt32) {
    switch mode & 0o170000 {
    case 0o100000: self = .regular
    case 0o040000: self = .directory
    case 0o120000: self = .symbolicLink
    case 0o010000: self = .fifo
    case 0o020000: self = .characterDevice
    case 0o060000: self = .blockDevice
    case 0o140000: self = .socket
    default: return nil
    }
  }

  /// The `S_IFMT` bits of this kind.
  public var modeBits: UInt32 {
    switch self {
    case .regular: 0o100000
    case .directory: 0o040000
    case .symbolicLink: 0o120000
    case .fifo: 0o010000
    case .characterDevice: 0o020000
    case .blockDevice: 0o060000
    case .socket: 0o140000
    }
  }
}

/// A point in time with nanoseconds, as in `struct timespec`.
public struct FileTime: Sendable, Hashable, Comparable, CustomStringConvertible {
  public var seconds: Int64
  public var nanoseconds: Int64
  public init(seconds: Int64, nanoseconds: Int64) {
    self.seconds = seconds
    self.nanoseconds = nanoseconds
  }
  public static func < (a: FileTime, b: FileTime) -> Bool {
    (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
  }
  public var description: String { "\(seconds).\(nanoseconds)" }
}

/// One time stamp of `setTimes`: leave it, set it to now, or set it to a value.
public enum TimeUpdate: Sendable, Hashable {
  case omit
  case now
  case set(FileTime)
}

/// The result of `stat`.
public struct FileStatus: Sendable, Hashable {
  public var kind: FileKind
  /// The permission bits, `mode & 0o7777`.
  public var permissions: UInt32
  public var inode: UInt64
  public var linkCount: UInt64
  public var user: UInt32
  public var group: UInt32
  public var size: Int64
  /// Allocated storage in 512-byte units.
  public var blocks: Int64
  /// The device number of a character or block device (`st_rdev`).
  public var device: UInt64
  public var accessTime: FileTime
  public var modificationTime: FileTime
  public var changeTime: FileTime

  public init(
    kind: FileKind, permissions: UInt32, inode: UInt64, linkCount: UInt64, user: UInt32,
    group: UInt32, size: Int64, blocks: Int64, device: UInt64, accessTime: FileTime,
    modificationTime: FileTime, changeTime: FileTime
  ) {
    self.kind = kind
    self.permissions = permissions
    self.inode = inode
    self.linkCount = linkCount
    self.user = user
    self.group = group
    self.size = size
    self.blocks = blocks
    self.device = device
    self.accessTime = accessTime
    self.modificationTime = modificationTime
    self.changeTime = changeTime
  }
}

/// The result of `statvfs`.
public struct FileSystemStatus: Sendable, Hashable {
  public var blockSize: UInt64
  public var blocks: UInt64
  public var freeBlocks: UInt64
  public var availableBlocks: UInt64
  public var files: UInt64
  public var freeFiles: UInt64
  public var nameMaximum: UInt64

  public init(
    blockSize: UInt64, blocks: UInt64, freeBlocks: UInt64, availableBlocks: UInt64,
    files: UInt64, freeFiles: UInt64, nameMaximum: UInt64
  ) {
    self.blockSize = blockSize
    self.blocks = blocks
    self.freeBlocks = freeBlocks
    self.availableBlocks = availableBlocks
    self.files = files
    self.freeFiles = freeFiles
    self.nameMaximum = nameMaximum
  }
}

/// The `access` mode bits; empty means `F_OK`.
public struct AccessMode: OptionSet, Sendable, Hashable {
  public let rawValue: Int32
  public init(rawValue: Int32) { self.rawValue = rawValue }
  public static let read = AccessMode(rawValue: 4)
  public static let write = AccessMode(rawValue: 2)
  public static let execute = AccessMode(rawValue: 1)
}

/// How `open` opens a file. Without `.write`, a file is opened read-only.
public struct OpenOptions: OptionSet, Sendable, Hashable {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }
  public static let read = OpenOptions(rawValue: 1 << 0)
  public static let write = OpenOptions(rawValue: 1 << 1)
  /// `O_CREAT`.
  public static let create = OpenOptions(rawValue: 1 << 2)
  /// `O_EXCL` (with `.create`): fails with EEXIST when the name exists.
  public static let exclusive = OpenOptions(rawValue: 1 << 3)
  /// `O_TRUNC`.
  public static let truncate = OpenOptions(rawValue: 1 << 4)
  /// `O_APPEND`.
  public static let append = OpenOptions(rawValue: 1 << 5)
  /// `O_NOFOLLOW`: a symbolic link as the last component fails with ELOOP.
  public static let noFollow = OpenOptions(rawValue: 1 << 6)
  /// `O_DIRECTORY`: fails with ENOTDIR unless the path is a directory.
  public static let directory = OpenOptions(rawValue: 1 << 7)

  public static let readWrite: OpenOptions = [.read, .write]
}

/// A file opened by `open`; the subject gives the number its own meaning.
public struct OpenFile: Sendable, Hashable {
  public var id: UInt64
  public init(id: UInt64) { self.id = id }
}

/// A directory opened by `openDirectory`; the subject gives the number its own meaning.
public struct OpenDirectory: Sendable, Hashable {
  public var id: UInt64
  public init(id: UInt64) { self.id = id }
}

/// One entry of a directory listing.
public struct DirectoryEntry: Sendable, Hashable {
  /// The name, byte for byte (compare `Array(name.utf8)`).
  public var name: String
  public var inode: UInt64
  /// The kind, or `nil` when the subject does not know it (`DT_UNKNOWN`).
  public var kind: FileKind?
  public init(name: String, inode: UInt64, kind: FileKind?) {
    self.name = name
    self.inode = inode
    self.kind = kind
  }
}

/// Flags of `rename` (`renameat2`).
public struct RenameFlags: OptionSet, Sendable, Hashable {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }
  /// `RENAME_NOREPLACE`: EEXIST when the destination exists.
  public static let noReplace = RenameFlags(rawValue: 1)
  /// `RENAME_EXCHANGE`: swap source and destination atomically (EINVAL if unsupported).
  public static let exchange = RenameFlags(rawValue: 2)
  /// `RENAME_WHITEOUT`: leave a whiteout (a 0:0 character device) at the source, for overlayfs.
  public static let whiteout = RenameFlags(rawValue: 4)
}

/// Flags of `setxattr`.
public struct ExtendedAttributeFlags: OptionSet, Sendable, Hashable {
  public let rawValue: Int32
  public init(rawValue: Int32) { self.rawValue = rawValue }
  /// `XATTR_CREATE`: EEXIST when the attribute exists.
  public static let create = ExtendedAttributeFlags(rawValue: 1)
  /// `XATTR_REPLACE`: ENODATA when the attribute does not exist.
  public static let replace = ExtendedAttributeFlags(rawValue: 2)
}

/// A lock request for `setLock`; never waits.
public struct FileLock: Sendable, Hashable {
  /// Which lock family.
  public enum Style: Sendable, Hashable {
    /// `fcntl(F_SETLK)`: owned by the process, so never conflicts within one process.
    case processRecord
    /// `fcntl(F_OFD_SETLK)`: owned by the open file description.
    case openFileDescription
    /// `flock(LOCK_NB)`: whole file, owned by the open file description.
    case flock
  }
  /// The lock to take, or `.unlock`.
  public enum Kind: Sendable, Hashable {
    case shared, exclusive, unlock
  }
  public var style: Style
  public var kind: Kind
  /// The byte range of a record lock; length 0 means to the end. Ignored by `.flock`.
  public var start: Int64
  public var length: Int64

  public init(_ style: Style, _ kind: Kind, start: Int64 = 0, length: Int64 = 0) {
    self.style = style
    self.kind = kind
    self.start = start
    self.length = length
  }
}

/// The FALLOC_FL_* bits of fallocate(2) that reach a FUSE file system.
public enum AllocationMode {
  public static let keepSize: Int32 = 0x01
  public static let punchHole: Int32 = 0x02
  public static let zeroRange: Int32 = 0x10
}
