import CFuse
import Glibc
import SystemPackage
import Testing

@testable import FuseLowLevel

@Suite("Errno mapping")
struct ErrnoMappingTests {
  struct NotAnErrno: Error {}

  @Test func anErrnoStaysItself() {
    #expect(Errno(mapping: Errno.noSuchFileOrDirectory) == .noSuchFileOrDirectory)
    #expect(Errno(mapping: Errno.readOnlyFileSystem) == .readOnlyFileSystem)
  }

  @Test func anyOtherErrorIsEIO() {
    #expect(Errno(mapping: NotAnErrno()) == .ioError)
  }

  @Test func theCErrnoAfterAFailedCall() {
    #expect(Glibc.open("/nonexistent-\(getpid())/x", O_RDONLY) == -1)
    #expect(Errno.fromCErrno() == .noSuchFileOrDirectory)
  }

  @Test func libfuseNegatedReturns() {
    #expect(Errno.fromNegatedReturn(-ENOENT) == .noSuchFileOrDirectory)
    #expect(Errno.fromNegatedReturn(0) == nil)
    #expect(Errno.fromNegatedReturn(12) == nil)
  }

  @Test func errnoResultCatches() {
    let failed: Result<Int, Errno> = errnoResult { throw Errno.fileExists }
    #expect(failed == .failure(.fileExists))
    let other: Result<Int, Errno> = errnoResult { throw NotAnErrno() }
    #expect(other == .failure(.ioError))
    #expect(errnoResult { 7 } == .success(7))
  }
}

@Suite("Extended attribute replies")
struct ExtendedAttributeTests {
  @Test func sizeZeroAsksForTheSize() {
    #expect(extendedAttributeReply(value: [1, 2, 3], requestedSize: 0) == .size(3))
    #expect(extendedAttributeReply(value: [], requestedSize: 0) == .size(0))
  }

  @Test func aBufferTooSmallIsERANGE() {
    #expect(extendedAttributeReply(value: [1, 2, 3], requestedSize: 2) == .error(.outOfRange))
  }

  @Test func aBufferLargeEnoughGetsTheBytes() {
    #expect(extendedAttributeReply(value: [1, 2, 3], requestedSize: 3) == .bytes([1, 2, 3]))
    #expect(extendedAttributeReply(value: [1, 2, 3], requestedSize: 100) == .bytes([1, 2, 3]))
  }

  @Test func namesAreEachFollowedByNUL() {
    #expect(joinedAttributeNames([]) == [])
    #expect(
      joinedAttributeNames([Array("user.a".utf8), Array("user.bc".utf8)])
        == Array("user.a\0user.bc\0".utf8))
    let joined = joinedAttributeNames([Array("user.a".utf8)])
    #expect(extendedAttributeReply(value: joined, requestedSize: 0) == .size(7))
  }
}

@Suite("setattr bits")
struct AttributeChangesTests {
  func attributes() -> stat {
    var attributes = stat()
    attributes.st_mode = S_IFREG | 0o640
    attributes.st_uid = 1000
    attributes.st_gid = 100
    attributes.st_size = 42
    attributes.st_atim = timespec(tv_sec: 10, tv_nsec: 1)
    attributes.st_mtim = timespec(tv_sec: 20, tv_nsec: 2)
    return attributes
  }

  @Test func nothingSetChangesNothing() {
    let changes = attributeChanges(valid: 0, attributes: attributes(), handle: nil)
    #expect(changes.mode == nil && changes.uid == nil && changes.gid == nil)
    #expect(changes.size == nil && changes.accessTime == nil && changes.modificationTime == nil)
    #expect(changes.handle == nil)
  }

  @Test func eachBitSelectsItsField() {
    let valid =
      FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | FUSE_SET_ATTR_SIZE
    let changes = attributeChanges(valid: valid, attributes: attributes(), handle: 9)
    #expect(changes.mode == S_IFREG | 0o640)
    #expect(changes.uid == 1000)
    #expect(changes.gid == 100)
    #expect(changes.size == 42)
    #expect(changes.handle == 9)
    #expect(changes.accessTime == nil && changes.modificationTime == nil)
  }

  /// libfuse 3.14 passes the kernel's FATTR_KILL_SUIDGID on as FUSE_SET_ATTR_KILL_SUID.
  @Test func theKernelsKillSuidGidAsksToClearSetID() {
    let valid = FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_KILL_SUID
    #expect(attributeChanges(valid: valid, attributes: attributes(), handle: nil).clearSetID)
    #expect(
      !attributeChanges(valid: FUSE_SET_ATTR_SIZE, attributes: attributes(), handle: nil)
        .clearSetID)
  }

  @Test func explicitTimes() {
    let changes = attributeChanges(
      valid: FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME, attributes: attributes(), handle: nil)
    guard case .time(let access) = changes.accessTime,
      case .time(let modification) = changes.modificationTime
    else {
      Issue.record("expected explicit times, got \(changes)")
      return
    }
    #expect(access.tv_sec == 10 && access.tv_nsec == 1)
    #expect(modification.tv_sec == 20 && modification.tv_nsec == 2)
  }

  @Test func nowWinsOverTheTimeItCameWith() {
    let valid = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW
    let changes = attributeChanges(valid: valid, attributes: attributes(), handle: nil)
    guard case .now = changes.accessTime, case .now = changes.modificationTime else {
      Issue.record("expected now, got \(changes)")
      return
    }
    #expect(changes.size == nil)
  }
}

@Suite("Directory buffers")
struct DirectoryBufferTests {
  /// One fuse_dirent as the kernel reads it: ino, off, namelen, type, name, padded to 8 bytes.
  struct Dirent: Equatable {
    var inode: UInt64
    var offset: UInt64
    var type: UInt32
    var name: String
  }

  static func load<T: FixedWidthInteger>(_ bytes: [UInt8], _ at: Int, as: T.Type) -> T {
    bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: T.self) }
  }

  static func parse(_ bytes: [UInt8], used: Int, headerSize: Int = 0) -> [Dirent] {
    var entries: [Dirent] = []
    var position = 0
    while position < used {
      let start = position + headerSize
      let nameLength = Int(load(bytes, start + 16, as: UInt32.self))
      entries.append(
        Dirent(
          inode: load(bytes, start, as: UInt64.self),
          offset: load(bytes, start + 8, as: UInt64.self),
          type: load(bytes, start + 20, as: UInt32.self),
          name: String(decoding: bytes[(start + 24)..<(start + 24 + nameLength)], as: UTF8.self)))
      position = start + (24 + nameLength + 7) / 8 * 8
    }
    return entries
  }

  func entry(_ name: String, inode: UInt64, mode: mode_t, next: Int64) -> DirectoryEntry {
    var attributes = stat()
    attributes.st_ino = ino_t(inode)
    attributes.st_mode = mode
    return DirectoryEntry(name: Array(name.utf8), attributes: attributes, nextOffset: next)
  }

  @Test func packsWhileEntriesFitAndRefusesTheRest() {
    // Each one-byte name takes 24 bytes of header + 1, padded to 32.
    var buffer = DirectoryBuffer(capacity: 70, plus: false)
    let appended1 = buffer.append(
      entry("a", inode: 5, mode: S_IFREG | 0o644, next: 1), request: nil)
    #expect(appended1)
    let appended2 = buffer.append(
      entry("b", inode: 6, mode: S_IFDIR | 0o755, next: 2), request: nil)
    #expect(appended2)
    let appended3 = buffer.append(entry("c", inode: 7, mode: S_IFREG, next: 3), request: nil)
    #expect(!appended3)
    #expect(buffer.used == 64)
    #expect(
      Self.parse(buffer.bytes, used: buffer.used) == [
        Dirent(inode: 5, offset: 1, type: UInt32(DT_REG), name: "a"),
        Dirent(inode: 6, offset: 2, type: UInt32(DT_DIR), name: "b"),
      ])
  }

  @Test func anEntryThatDoesNotFitLeavesTheBufferAlone() {
    var buffer = DirectoryBuffer(capacity: 16, plus: false)
    let appended4 = buffer.append(
      entry("long-name", inode: 5, mode: S_IFREG, next: 1), request: nil)
    #expect(!appended4)
    #expect(buffer.used == 0)
    #expect(buffer.bytes.allSatisfy { $0 == 0 })
  }

  @Test func plusEntriesCarryTheNodeOnlyWhenGiven() {
    // fuse_direntplus: a 128-byte fuse_entry_out (its first field the node id) before the dirent.
    var buffer = DirectoryBuffer(capacity: 4096, plus: true)
    var full = entry("x", inode: 9, mode: S_IFREG, next: 1)
    full.entry = Entry(attributes: full.attributes, attributeTimeout: 1, entryTimeout: 1)
    let appended5 = buffer.append(full, request: nil)
    #expect(appended5)
    let appended6 = buffer.append(entry("..", inode: 1, mode: S_IFDIR, next: 2), request: nil)
    #expect(appended6)
    #expect(buffer.used == 2 * (128 + 32))
    #expect(Self.load(buffer.bytes, 0, as: UInt64.self) == 9)
    #expect(Self.load(buffer.bytes, 160, as: UInt64.self) == 0)
    #expect(
      Self.parse(buffer.bytes, used: 160, headerSize: 128) == [
        Dirent(inode: 9, offset: 1, type: UInt32(DT_REG), name: "x")
      ])
  }
}

@Suite("Session options")
struct SessionOptionsTests {
  @Test func defaultsArePrivateWithKernelPermissionChecks() {
    let options = SessionOptions(mountPoint: "/mnt/docs")
    #expect(
      options.arguments == ["docsync", "-o", "fsname=docsync,subtype=docsync,default_permissions"])
    #expect(!options.writebackCache)
    #expect(!options.arguments.joined().contains("noatime"))
  }

  @Test func allowOtherAndDebug() {
    let options = SessionOptions(
      mountPoint: "/mnt/docs", fsName: "docs", allowOther: true, debug: true)
    #expect(
      options.arguments == [
        "docsync", "-o", "fsname=docs,subtype=docsync,default_permissions,allow_other", "-d",
      ])
  }

  @Test func onlySharedMountsHaveTheKernelCheckModes() {
    #expect(!SessionOptions.kernelChecksModes(allowOther: false))
    #expect(SessionOptions.kernelChecksModes(allowOther: true))
    let options = SessionOptions(mountPoint: "/mnt/docs", checksModes: false)
    #expect(options.arguments == ["docsync", "-o", "fsname=docsync,subtype=docsync"])
  }

  @Test func commasAndBackslashesInNamesAreEscaped() {
    let options = SessionOptions(mountPoint: "/m", fsName: #"a,b\c"#)
    #expect(options.arguments[2].hasPrefix(#"fsname=a\,b\\c,subtype="#))
  }

  @Test func capabilities() {
    let everything = UInt32.max
    let libfuseDefaults = UInt32(
      FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_AUTO_INVAL_DATA)
    let want = wantedCapabilities(capable: everything, want: libfuseDefaults, writebackCache: false)
    #expect(want & UInt32(FUSE_CAP_ATOMIC_O_TRUNC) == 0)
    #expect(want & UInt32(FUSE_CAP_HANDLE_KILLPRIV) == 0)
    #expect(want & UInt32(FUSE_CAP_WRITEBACK_CACHE) == 0)
    #expect(want & UInt32(FUSE_CAP_AUTO_INVAL_DATA) == 0)
    #expect(want & UInt32(FUSE_CAP_SPLICE_WRITE) != 0)
    #expect(want & UInt32(FUSE_CAP_READDIRPLUS_AUTO) != 0)
    #expect(want & UInt32(FUSE_CAP_PARALLEL_DIROPS) != 0)
    #expect(want & UInt32(FUSE_CAP_CACHE_SYMLINKS) != 0)
    #expect(want & UInt32(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS) == 0)
    let writeback = wantedCapabilities(capable: everything, want: 0, writebackCache: true)
    #expect(writeback & UInt32(FUSE_CAP_WRITEBACK_CACHE) != 0)
    // Never ask for what the kernel does not offer: libfuse aborts the session then.
    let offered = UInt32(FUSE_CAP_ASYNC_READ)
    #expect(wantedCapabilities(capable: offered, want: 0, writebackCache: true) == offered)
  }
}
