import Glibc
import SystemPackage

/// A ``FileSystemSubject`` that makes Linux system calls on a folder: a local disk or a mount.
///
/// Every path is resolved from `root` one component at a time with `openat(O_PATH)`, and the
/// operation runs on the parent's descriptor and the last name (`fstatat`, `mkdirat`,
/// `renameat2`…), so paths longer than `PATH_MAX` work as they do for a program that walks
/// with `openat`. Open files are kernel file descriptors; directories are `DIR *` streams.
public struct PosixSubject: FileSystemSubject {
  /// The absolute path of the folder that the subject's paths are relative to.
  public let root: String
  public let capabilities: SubjectCapabilities
  public let caller: Caller

  /// A subject on `root`; `capabilities` defaults to ``defaultCapabilities``.
  public init(root: String, capabilities: SubjectCapabilities? = nil) {
    self.root = root
    self.capabilities = capabilities ?? Self.defaultCapabilities
    self.caller = Caller(user: geteuid(), group: getegid())
  }

  /// What a local disk offers this process: mmap and locks always; device nodes and chown to
  /// anyone only as root; permission checks that bind the caller only for other users.
  public static var defaultCapabilities: SubjectCapabilities {
    geteuid() == 0
      ? [.mmap, .locks, .deviceNodes, .changeOwner] : [.mmap, .locks, .permissionChecks]
  }

  // MARK: Attributes

  public func status(_ path: String, followSymlinks: Bool) throws -> FileStatus {
    try withParent(path) { dir, name in
      var st = stat()
      try check(fstatat(dir, name, &st, followSymlinks ? 0 : AT_SYMLINK_NOFOLLOW))
      return FileStatus(st)
    }
  }

  public func status(of file: OpenFile) throws -> FileStatus {
    var st = stat()
    try check(fstat(fd(file), &st))
    return FileStatus(st)
  }

  public func status(of directory: OpenDirectory) throws -> FileStatus {
    guard let stream = OpaquePointer(bitPattern: UInt(directory.id)) else {
      throw Errno.badFileDescriptor
    }
    var st = stat()
    try check(fstat(dirfd(stream), &st))
    return FileStatus(st)
  }

  public func allocate(_ file: OpenFile, mode: Int32, offset: Int64, length: Int64) throws {
    try check(LibC.fallocate(try fd(file), mode, offset, length))
  }

  public func setMode(_ path: String, _ mode: UInt32) throws {
    try withParent(path) { dir, name in try check(fchmodat(dir, name, mode, 0)) }
  }

  public func setOwner(_ path: String, user: UInt32?, group: UInt32?) throws {
    try withParent(path) { dir, name in
      try check(fchownat(dir, name, user ?? UInt32.max, group ?? UInt32.max, 0))
    }
  }

  public func setTimes(_ path: String, access: TimeUpdate, modification: TimeUpdate) throws {
    let times = [timespec(access), timespec(modification)]
    try withParent(path) { dir, name in try check(utimensat(dir, name, times, 0)) }
  }

  public func truncate(_ path: String, size: Int64) throws {
    try withParent(path) { dir, name in
      let fd = try check(openat(dir, name, O_WRONLY | O_CLOEXEC))
      defer { Glibc.close(fd) }
      try check(ftruncate(fd, off_t(size)))
    }
  }

  public func access(_ path: String, _ mode: AccessMode) throws {
    try withParent(path) { dir, name in try check(faccessat(dir, name, mode.rawValue, 0)) }
  }

  public func fileSystemStatus(_ path: String) throws -> FileSystemStatus {
    try withParent(path) { dir, name in
      let fd = try check(openat(dir, name, oPath | O_CLOEXEC))
      defer { Glibc.close(fd) }
      var s = statvfs()
      try check(fstatvfs(fd, &s))
      return FileSystemStatus(
        blockSize: UInt64(s.f_frsize), blocks: UInt64(s.f_blocks),
        freeBlocks: UInt64(s.f_bfree), availableBlocks: UInt64(s.f_bavail),
        files: UInt64(s.f_files), freeFiles: UInt64(s.f_ffree), nameMaximum: UInt64(s.f_namemax))
    }
  }

  // MARK: Directories

  public func makeDirectory(_ path: String, mode: UInt32) throws {
    try withParent(path) { dir, name in try check(mkdirat(dir, name, mode)) }
  }

  public func removeDirectory(_ path: String) throws {
    try withParent(path) { dir, name in try check(unlinkat(dir, name, AT_REMOVEDIR)) }
  }

  public func openDirectory(_ path: String) throws -> OpenDirectory {
    try withParent(path) { dir, name in
      let fd = try check(openat(dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
      guard let stream = fdopendir(fd) else {
        let error = Errno(rawValue: errno)
        Glibc.close(fd)
        throw error
      }
      return OpenDirectory(id: UInt64(UInt(bitPattern: stream)))
    }
  }

  public func readDirectory(_ directory: OpenDirectory, maximumCount: Int) throws
    -> [DirectoryEntry]
  {
    let stream = try self.stream(directory)
    var entries: [DirectoryEntry] = []
    while entries.count < maximumCount {
      errno = 0
      guard let entry = readdir(stream) else {
        if errno != 0 { throw Errno(rawValue: errno) }
        break
      }
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      entries.append(
        DirectoryEntry(
          name: name, inode: UInt64(entry.pointee.d_ino), kind: FileKind(type: entry.pointee.d_type)
        ))
    }
    return entries
  }

  public func synchronize(_ directory: OpenDirectory) throws {
    try check(fsync(dirfd(try stream(directory))))
  }

  public func close(_ directory: OpenDirectory) throws {
    try check(closedir(try stream(directory)))
  }

  // MARK: Files

  public func open(_ path: String, _ options: OpenOptions, mode: UInt32) throws -> OpenFile {
    var flags = O_CLOEXEC
    switch (options.contains(.read), options.contains(.write)) {
    case (true, true): flags |= O_RDWR
    case (false, true): flags |= O_WRONLY
    default: flags |= O_RDONLY
    }
    if options.contains(.create) { flags |= O_CREAT }
    if options.contains(.exclusive) { flags |= O_EXCL }
    if options.contains(.truncate) { flags |= O_TRUNC }
    if options.contains(.append) { flags |= O_APPEND }
    if options.contains(.noFollow) { flags |= O_NOFOLLOW }
    if options.contains(.directory) { flags |= O_DIRECTORY }
    return try withParent(path) { dir, name in
      OpenFile(id: UInt64(try check(openat(dir, name, flags, mode))))
    }
  }

  public func read(_ file: OpenFile, at offset: Int64, count: Int) throws -> [UInt8] {
    let fd = try fd(file)
    var result = [UInt8](repeating: 0, count: count)
    var done = 0
    while done < count {
      let n = result.withUnsafeMutableBytes { buffer in
        pread(fd, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
      }
      if n < 0 {
        if errno == EINTR { continue }
        throw Errno(rawValue: errno)
      }
      if n == 0 { break }
      done += n
    }
    result.removeSubrange(done...)
    return result
  }

  public func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws -> Int {
    let fd = try fd(file)
    var done = 0
    while done < bytes.count {
      let n = bytes.withUnsafeBytes { buffer in
        pwrite(fd, buffer.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
      }
      if n < 0 {
        if errno == EINTR { continue }
        throw Errno(rawValue: errno)
      }
      done += n
    }
    return done
  }

  public func truncate(_ file: OpenFile, size: Int64) throws {
    try check(ftruncate(fd(file), off_t(size)))
  }

  public func synchronize(_ file: OpenFile, dataOnly: Bool) throws {
    try check(dataOnly ? fdatasync(fd(file)) : fsync(fd(file)))
  }

  public func close(_ file: OpenFile) throws {
    try check(Glibc.close(fd(file)))
  }

  public func removeFile(_ path: String) throws {
    try withParent(path) { dir, name in try check(unlinkat(dir, name, 0)) }
  }

  public func rename(_ source: String, to destination: String, flags: RenameFlags) throws {
    try withParent(source) { sourceDir, sourceName in
      try withParent(destination) { destinationDir, destinationName in
        if flags.isEmpty {
          try check(renameat(sourceDir, sourceName, destinationDir, destinationName))
        } else {
          try check(
            LibC.renameat2(sourceDir, sourceName, destinationDir, destinationName, flags.rawValue))
        }
      }
    }
  }

  // MARK: Links and special files

  public func makeSymbolicLink(_ path: String, target: String) throws {
    try withParent(path) { dir, name in try check(symlinkat(target, dir, name)) }
  }

  public func readSymbolicLink(_ path: String) throws -> String {
    try withParent(path) { dir, name in
      var buffer = [UInt8](repeating: 0, count: 8192)
      let n = try check(
        buffer.withUnsafeMutableBytes { readlinkat(dir, name, $0.baseAddress!, $0.count) })
      return String(decoding: buffer[..<n], as: UTF8.self)
    }
  }

  public func makeHardLink(_ path: String, to existing: String) throws {
    try withParent(existing) { existingDir, existingName in
      try withParent(path) { dir, name in
        try check(linkat(existingDir, existingName, dir, name, 0))
      }
    }
  }

  public func makeNode(_ path: String, kind: FileKind, mode: UInt32, device: UInt64) throws {
    try withParent(path) { dir, name in
      try check(mknodat(dir, name, kind.modeBits | mode, dev_t(device)))
    }
  }

  // MARK: Extended attributes

  public func extendedAttributeSize(_ path: String, name: String) throws -> Int {
    try withProcPath(path) { try check(LibC.getxattr($0, name, nil, 0)) }
  }

  public func getExtendedAttribute(_ path: String, name: String, capacity: Int) throws -> [UInt8] {
    try withProcPath(path) { procPath in
      var value = [UInt8](repeating: 0, count: max(capacity, 1))
      let n = try check(
        value.withUnsafeMutableBytes { LibC.getxattr(procPath, name, $0.baseAddress, capacity) })
      return Array(value[..<n])
    }
  }

  public func setExtendedAttribute(
    _ path: String, name: String, value: [UInt8], flags: ExtendedAttributeFlags
  ) throws {
    try withProcPath(path) { procPath in
      try check(
        value.withUnsafeBytes {
          LibC.setxattr(procPath, name, $0.baseAddress, value.count, flags.rawValue)
        })
    }
  }

  public func listExtendedAttributes(_ path: String) throws -> [String] {
    try withProcPath(path) { procPath in
      while true {
        let size = try check(LibC.listxattr(procPath, nil, 0))
        var buffer = [CChar](repeating: 0, count: size + 1)
        let n = LibC.listxattr(procPath, &buffer, size)
        if n < 0 && errno == ERANGE { continue }  // the list grew in between
        try check(n)
        return buffer[..<n].split(separator: 0).map {
          String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
      }
    }
  }

  public func removeExtendedAttribute(_ path: String, name: String) throws {
    try withProcPath(path) { try check(LibC.removexattr($0, name)) }
  }

  // MARK: Kernel-only

  public func mapRead(_ file: OpenFile, at offset: Int64, count: Int) throws -> [UInt8] {
    guard count > 0 else { return [] }
    return try withMapping(file, offset: offset, count: count, protection: PROT_READ) { memory in
      Array(UnsafeRawBufferPointer(start: memory, count: count))
    }
  }

  public func mapWrite(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws {
    guard !bytes.isEmpty else { return }
    try withMapping(
      file, offset: offset, count: bytes.count, protection: PROT_READ | PROT_WRITE
    ) { memory in
      bytes.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
    }
  }

  public func setLock(_ file: OpenFile, _ lock: FileLock) throws {
    let fd = try fd(file)
    switch lock.style {
    case .flock:
      let operation: Int32 =
        switch lock.kind {
        case .shared: LOCK_SH
        case .exclusive: LOCK_EX
        case .unlock: LOCK_UN
        }
      try check(flock(fd, operation | LOCK_NB))
    case .processRecord, .openFileDescription:
      var record = Glibc.flock()
      record.l_type =
        switch lock.kind {
        case .shared: Int16(F_RDLCK)
        case .exclusive: Int16(F_WRLCK)
        case .unlock: Int16(F_UNLCK)
        }
      record.l_whence = Int16(SEEK_SET)
      record.l_start = off_t(lock.start)
      record.l_len = off_t(lock.length)
      record.l_pid = 0  // required by F_OFD_SETLK
      let command = lock.style == .processRecord ? F_SETLK : LibC.F_OFD_SETLK
      try check(fcntl(fd, command, &record))
    }
  }

  // MARK: Resolution

  /// Runs `body` with a descriptor of the parent folder of `path` and its last name (`.` for
  /// the root), walking from `root` with `openat(O_PATH)` one component at a time.
  @discardableResult
  func withParent<T>(_ path: String, _ body: (Int32, String) throws -> T) throws -> T {
    var components = path.utf8.split(separator: UInt8(ascii: "/")).map {
      String(decoding: $0, as: UTF8.self)
    }
    let last = components.popLast() ?? "."
    var dir = try check(Glibc.open(root, oPath | O_DIRECTORY | O_CLOEXEC))
    defer { Glibc.close(dir) }
    for component in components {
      let next = try check(openat(dir, component, oPath | O_DIRECTORY | O_CLOEXEC))
      Glibc.close(dir)
      dir = next
    }
    return try body(dir, last)
  }

  /// Runs `body` with a short path to `path` through `/proc/self/fd`, for the calls that have
  /// no `*at` form in glibc (the xattr family).
  @discardableResult
  func withProcPath<T>(_ path: String, _ body: (String) throws -> T) throws -> T {
    try withParent(path) { dir, name in try body("/proc/self/fd/\(dir)/\(name)") }
  }

  func withMapping<T>(
    _ file: OpenFile, offset: Int64, count: Int, protection: Int32,
    _ body: (UnsafeMutableRawPointer) throws -> T
  ) throws -> T {
    let page = Int64(sysconf(Int32(_SC_PAGESIZE)))
    let start = offset / page * page
    let length = Int(offset - start) + count
    guard
      let mapping = mmap(nil, length, protection, MAP_SHARED, try fd(file), off_t(start)),
      mapping != MAP_FAILED
    else { throw Errno(rawValue: errno) }
    defer { munmap(mapping, length) }
    let result = try body(mapping + Int(offset - start))
    if protection & PROT_WRITE != 0 { try check(msync(mapping, length, MS_SYNC)) }
    return result
  }

  func fd(_ file: OpenFile) throws -> Int32 {
    guard let fd = Int32(exactly: file.id) else { throw Errno.badFileDescriptor }
    return fd
  }

  func stream(_ directory: OpenDirectory) throws -> OpaquePointer {
    guard let pointer = OpaquePointer(bitPattern: UInt(directory.id)) else {
      throw Errno.badFileDescriptor
    }
    return pointer
  }
}

/// `O_PATH`, which glibc declares only under `_GNU_SOURCE` (Swift's Glibc module has not).
let oPath: Int32 = 0o10000000

@discardableResult
func check<T: BinaryInteger>(_ result: T) throws -> T {
  if result < 0 { throw Errno(rawValue: errno) }
  return result
}

/// The glibc functions and constants that are declared only under `_GNU_SOURCE` or
/// `<sys/xattr.h>`, which Swift's Glibc module does not import; looked up once with `dlsym`.
enum LibC {
  static let F_OFD_SETLK: Int32 = 37
  static let UTIME_NOW: Int = (1 << 30) - 1
  static let UTIME_OMIT: Int = (1 << 30) - 2

  typealias RenameAt2 =
    @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
  typealias GetXattr =
    @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) ->
    Int
  typealias SetXattr =
    @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) ->
    Int32
  typealias ListXattr =
    @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>?, Int) -> Int
  typealias RemoveXattr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Int32

  static func symbol<T>(_ name: String, as type: T.Type) -> T {
    guard let address = dlsym(dlopen(nil, RTLD_NOW), name) else {
      fatalError("glibc has no \(name)")
    }
    return unsafeBitCast(address, to: type)
  }

  nonisolated(unsafe) static let renameat2 = symbol("renameat2", as: RenameAt2.self)
  typealias Fallocate = @convention(c) (Int32, Int32, Int64, Int64) -> Int32
  nonisolated(unsafe) static let fallocate = symbol("fallocate", as: Fallocate.self)
  nonisolated(unsafe) static let getxattr = symbol("getxattr", as: GetXattr.self)
  nonisolated(unsafe) static let setxattr = symbol("setxattr", as: SetXattr.self)
  nonisolated(unsafe) static let listxattr = symbol("listxattr", as: ListXattr.self)
  nonisolated(unsafe) static let removexattr = symbol("removexattr", as: RemoveXattr.self)
}

extension timespec {
  init(_ update: TimeUpdate) {
    switch update {
    case .omit: self.init(tv_sec: 0, tv_nsec: LibC.UTIME_OMIT)
    case .now: self.init(tv_sec: 0, tv_nsec: LibC.UTIME_NOW)
    case .set(let time): self.init(tv_sec: Int(time.seconds), tv_nsec: Int(time.nanoseconds))
    }
  }
}

extension FileTime {
  init(_ time: timespec) {
    self.init(seconds: Int64(time.tv_sec), nanoseconds: Int64(time.tv_nsec))
  }
}

extension FileStatus {
  init(_ st: stat) {
    self.init(
      kind: FileKind(mode: st.st_mode) ?? .regular, permissions: st.st_mode & 0o7777,
      inode: UInt64(st.st_ino), linkCount: UInt64(st.st_nlink), user: st.st_uid,
      group: st.st_gid, size: Int64(st.st_size), blocks: Int64(st.st_blocks),
      device: UInt64(st.st_rdev), accessTime: FileTime(st.st_atim),
      modificationTime: FileTime(st.st_mtim), changeTime: FileTime(st.st_ctim))
  }
}

extension FileKind {
  init?(type: UInt8) {
    switch Int(type) {
    case Int(DT_REG): self = .regular
    case Int(DT_DIR): self = .directory
    case Int(DT_LNK): self = .symbolicLink
    case Int(DT_FIFO): self = .fifo
    case Int(DT_CHR): self = .characterDevice
    case Int(DT_BLK): self = .blockDevice
    case Int(DT_SOCK): self = .socket
    default: return nil
    }
  }
}
