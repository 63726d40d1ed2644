import Glibc
import SystemPackage

/// Who sent a request, as the kernel reports it.
public struct RequestContext: Sendable {
  public var uid: UInt32
  public var gid: UInt32
  public var pid: Int32
  public var umask: UInt32
  /// For a write: the kernel asks the file system to clear the file's setuid bit, and its
  /// setgid bit where the group may execute, because the writer lacks CAP_FSETID
  /// (FUSE_WRITE_KILL_SUIDGID; only sent when the session has `handleKillPrivileges`).
  public var clearsSetID: Bool

  public init(uid: UInt32, gid: UInt32, pid: Int32, umask: UInt32, clearsSetID: Bool = false) {
    self.uid = uid
    self.gid = gid
    self.pid = pid
    self.umask = umask
    self.clearsSetID = clearsSetID
  }
}

/// A node the kernel may cache under a name: the answer to lookup, mknod, mkdir, symlink, link and create.
///
/// An entry whose `attributes.st_ino` is 0 is a negative entry: the kernel caches "no such name"
/// for `entryTimeout` seconds.
public struct Entry: @unchecked Sendable {
  public var attributes: stat
  public var generation: UInt64
  public var attributeTimeout: Double
  public var entryTimeout: Double

  public init(
    attributes: stat, generation: UInt64 = 0, attributeTimeout: Double, entryTimeout: Double
  ) {
    self.attributes = attributes
    self.generation = generation
    self.attributeTimeout = attributeTimeout
    self.entryTimeout = entryTimeout
  }
}

/// Attributes with how long the kernel may cache them.
public struct AttributeReply: @unchecked Sendable {
  public var attributes: stat
  public var timeout: Double

  public init(attributes: stat, timeout: Double) {
    self.attributes = attributes
    self.timeout = timeout
  }
}

/// The answer to open, opendir and create: a handle and how the kernel should cache the file.
public struct OpenReply: Sendable {
  public var handle: UInt64
  public var directIO: Bool
  public var keepCache: Bool
  public var nonSeekable: Bool
  /// For opendir: the kernel may cache the listing (FOPEN_CACHE_DIR).
  public var cacheDirectory: Bool
  /// The kernel sends no FLUSH at the close of this open (FOPEN_NOFLUSH).
  public var noFlush: Bool
  /// A descriptor of the file's content that the kernel may read and write itself (FUSE
  /// passthrough), with no read or write request; used when the session has passthrough on.
  /// Every open of an inode that is open already gets the backing file of the first one.
  public var backingFile: Int32?
  /// Pass `backingFile` through only when the inode is passed through already (the kernel then
  /// takes no other kind of open); otherwise serve the open with requests, direct I/O. For
  /// writes that must reach the file system: a write through passthrough never does, so the
  /// file system could not clear set-ID bits (FUSE_WRITE_KILL_SUIDGID) on it.
  public var passesThroughOnlyWhenShared: Bool

  public init(
    handle: UInt64, directIO: Bool = false, keepCache: Bool = false, nonSeekable: Bool = false,
    cacheDirectory: Bool = false, noFlush: Bool = false, backingFile: Int32? = nil,
    passesThroughOnlyWhenShared: Bool = false
  ) {
    self.passesThroughOnlyWhenShared = passesThroughOnlyWhenShared
    self.handle = handle
    self.directIO = directIO
    self.keepCache = keepCache
    self.nonSeekable = nonSeekable
    self.cacheDirectory = cacheDirectory
    self.noFlush = noFlush
    self.backingFile = backingFile
  }
}

/// Data for a read reply: bytes in memory, or a range of an open file that libfuse splices.
public enum ReadData: Sendable {
  case bytes([UInt8])
  case file(descriptor: Int32, offset: Int64, count: Int)
}

/// A time to set with setattr.
public enum TimeChange: Sendable {
  case now
  case time(timespec)
}

/// The changes that one setattr asks for; nil means unchanged.
public struct AttributeChanges: Sendable {
  public var mode: mode_t?
  public var uid: uid_t?
  public var gid: gid_t?
  public var size: off_t?
  public var accessTime: TimeChange?
  public var modificationTime: TimeChange?
  /// The open handle the change came through (ftruncate, futimens), if any.
  public var handle: UInt64?
  /// Clear setuid, and setgid where the group may execute, as a truncate by a caller without
  /// CAP_FSETID or any chown does on a local disk (FATTR_KILL_SUIDGID; only sent when the
  /// session has `handleKillPrivileges`).
  public var clearSetID: Bool

  public init(
    mode: mode_t? = nil, uid: uid_t? = nil, gid: gid_t? = nil, size: off_t? = nil,
    accessTime: TimeChange? = nil, modificationTime: TimeChange? = nil, handle: UInt64? = nil,
    clearSetID: Bool = false
  ) {
    self.clearSetID = clearSetID
    self.mode = mode
    self.uid = uid
    self.gid = gid
    self.size = size
    self.accessTime = accessTime
    self.modificationTime = modificationTime
    self.handle = handle
  }
}

/// One directory entry for readdir; `entry` is filled for readdirplus.
public struct DirectoryEntry: @unchecked Sendable {
  public var name: [UInt8]
  /// At least `st_ino` and the file type bits of `st_mode`.
  public var attributes: stat
  /// The offset the kernel passes back to continue after this entry.
  public var nextOffset: Int64
  public var entry: Entry?

  public init(name: [UInt8], attributes: stat, nextOffset: Int64, entry: Entry? = nil) {
    self.name = name
    self.attributes = attributes
    self.nextOffset = nextOffset
    self.entry = entry
  }
}

/// The flags of renameat2 that reach a FUSE file system.
public struct RenameFlags: OptionSet, Sendable {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }
  public static let noReplace = RenameFlags(rawValue: 1)
  public static let exchange = RenameFlags(rawValue: 2)
}

/// The operations of libfuse's low-level API, by inode number and name, in Swift terms.
///
/// The session replies exactly once with what each method returns. Methods are called
/// concurrently from libfuse's worker threads. Locks are deliberately absent: without
/// getlk, setlk and flock the kernel keeps POSIX and flock locks locally.
public protocol LowLevelFileSystem: AnyObject, Sendable {
  func lookup(parent: UInt64, name: [UInt8], context: RequestContext) -> Result<Entry, Errno>
  /// The kernel drops `count` references that lookups (and readdirplus, create...) gave it.
  func forget(inode: UInt64, count: UInt64)
  func getAttributes(inode: UInt64, handle: UInt64?, context: RequestContext) -> Result<
    AttributeReply, Errno
  >
  func setAttributes(inode: UInt64, changes: AttributeChanges, context: RequestContext) -> Result<
    AttributeReply, Errno
  >
  func readLink(inode: UInt64, context: RequestContext) -> Result<[UInt8], Errno>
  func makeNode(
    parent: UInt64, name: [UInt8], mode: mode_t, device: dev_t, context: RequestContext
  ) -> Result<Entry, Errno>
  func makeDirectory(parent: UInt64, name: [UInt8], mode: mode_t, context: RequestContext)
    -> Result<Entry, Errno>
  func unlink(parent: UInt64, name: [UInt8], context: RequestContext) -> Result<Void, Errno>
  func removeDirectory(parent: UInt64, name: [UInt8], context: RequestContext) -> Result<
    Void, Errno
  >
  func symlink(target: [UInt8], parent: UInt64, name: [UInt8], context: RequestContext) -> Result<
    Entry, Errno
  >
  func rename(
    parent: UInt64, name: [UInt8], newParent: UInt64, newName: [UInt8], flags: RenameFlags,
    context: RequestContext
  ) -> Result<Void, Errno>
  func link(inode: UInt64, newParent: UInt64, newName: [UInt8], context: RequestContext) -> Result<
    Entry, Errno
  >
  func open(inode: UInt64, flags: Int32, context: RequestContext) -> Result<OpenReply, Errno>
  func read(inode: UInt64, handle: UInt64, offset: Int64, size: Int, context: RequestContext)
    -> Result<ReadData, Errno>
  /// `data` is valid only during the call.
  func write(
    inode: UInt64, handle: UInt64, data: UnsafeRawBufferPointer, offset: Int64,
    context: RequestContext
  ) -> Result<Int, Errno>
  func flush(inode: UInt64, handle: UInt64, context: RequestContext) -> Result<Void, Errno>
  func release(inode: UInt64, handle: UInt64, flags: Int32, context: RequestContext) -> Result<
    Void, Errno
  >
  func fsync(inode: UInt64, handle: UInt64, dataOnly: Bool, context: RequestContext) -> Result<
    Void, Errno
  >
  /// fallocate(2) on an open file: `mode` holds the FALLOC_FL_* bits the kernel passes on
  /// (KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE; it refuses the others itself).
  func allocate(
    inode: UInt64, handle: UInt64, mode: Int32, offset: Int64, length: Int64,
    context: RequestContext
  ) -> Result<Void, Errno>
  func openDirectory(inode: UInt64, flags: Int32, context: RequestContext) -> Result<
    OpenReply, Errno
  >
  /// Calls `emit` for entries from `offset` on until it returns false (the reply is full).
  /// With `plus`, each emitted entry except "." and ".." that `emit` accepted counts as a lookup.
  func readDirectory(
    inode: UInt64, handle: UInt64, offset: Int64, plus: Bool, context: RequestContext,
    emit: (DirectoryEntry) -> Bool
  ) -> Result<Void, Errno>
  func releaseDirectory(inode: UInt64, handle: UInt64, context: RequestContext) -> Result<
    Void, Errno
  >
  func fsyncDirectory(inode: UInt64, handle: UInt64, dataOnly: Bool, context: RequestContext)
    -> Result<Void, Errno>
  func statfs(inode: UInt64, context: RequestContext) -> Result<statvfs, Errno>
  func setExtendedAttribute(
    inode: UInt64, name: [UInt8], value: UnsafeRawBufferPointer, flags: Int32,
    context: RequestContext
  ) -> Result<Void, Errno>
  /// The whole value; the session answers size queries and ERANGE.
  func getExtendedAttribute(inode: UInt64, name: [UInt8], context: RequestContext) -> Result<
    [UInt8], Errno
  >
  /// The names; the session joins them with NUL and answers size queries and ERANGE.
  func listExtendedAttributes(inode: UInt64, context: RequestContext) -> Result<[[UInt8]], Errno>
  func removeExtendedAttribute(inode: UInt64, name: [UInt8], context: RequestContext) -> Result<
    Void, Errno
  >
  func access(inode: UInt64, mask: Int32, context: RequestContext) -> Result<Void, Errno>
  func create(
    parent: UInt64, name: [UInt8], mode: mode_t, flags: Int32, context: RequestContext
  ) -> Result<(Entry, OpenReply), Errno>
  /// The session is over (unmounted or exited): flush what is pending.
  func destroy()
}

extension LowLevelFileSystem {
  /// A file system that allocates nothing says so: the kernel then answers EOPNOTSUPP to every
  /// later fallocate without asking (fc->no_fallocate).
  public func allocate(
    inode: UInt64, handle: UInt64, mode: Int32, offset: Int64, length: Int64,
    context: RequestContext
  ) -> Result<Void, Errno> {
    .failure(.noFunction)
  }
}
