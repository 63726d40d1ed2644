import DocumentFileSystem
import FileSystemConformance
import Glibc
import LocalStore
import SystemPackage

/// `DocumentFileSystem` driven in process as a path-based `FileSystemSubject`: paths are
/// walked component by component with lookup, as the kernel would, and released with forget.
final class InProcessSubject: FileSystemSubject, @unchecked Sendable {
  let fileSystem: DocumentFileSystem
  let capabilities: SubjectCapabilities
  let caller: FileSystemConformance.Caller
  private let requester: DocumentCaller
  private let umaskBits: UInt32
  private let lock = NSLockLike()
  private var files: [UInt64: (inode: UInt64, handle: UInt64?, append: Bool)] = [:]
  private var directories: [UInt64: (inode: UInt64, handle: UInt64, offset: Int64)] = [:]
  private var nextId: UInt64 = 1
  private let root = DocumentFileSystem.rootInode

  /// Operations come from this process's user; with `unprivileged`, from that user and group
  /// instead, who own the root, and the file system checks their permissions itself, as it
  /// does for the private mount of an ordinary user.
  init(stateFolder: String, unprivileged: (uid: UInt32, gid: UInt32)? = nil) throws {
    let identity = unprivileged ?? (getuid(), getgid())
    requester = DocumentCaller(uid: identity.uid, gid: identity.gid)
    caller = FileSystemConformance.Caller(user: identity.uid, group: identity.gid)
    fileSystem = try DocumentFileSystem(
      store: LocalStore(directory: stateFolder), owner: requester,
      checksPermissions: unprivileged != nil)
    capabilities =
      unprivileged == nil
      ? [.changeOwner, .deviceNodes, .docsyncRoot] : [.docsyncRoot, .permissionChecks]
    // The kernel applies the umask before a request reaches a FUSE file system.
    let current = umask(0)
    umask(current)
    umaskBits = UInt32(current)
  }

  // MARK: Path walking

  private func components(_ path: String) -> [[UInt8]] {
    path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map(Array.init)
  }

  private func lookup(_ parent: UInt64, _ name: [UInt8]) throws -> stat {
    let attributes = try fileSystem.lookup(parent: parent, name: name, caller: requester)
    fileSystem.forget(inode: UInt64(attributes.st_ino), count: 1)
    return attributes
  }

  /// Resolves a path to its inode; intermediate symbolic links are always followed.
  private func resolve(_ path: String, followLast: Bool = true) throws -> UInt64 {
    var pending = components(path)
    var current = root
    var links = 0
    while !pending.isEmpty {
      let name = pending.removeFirst()
      let attributes = try lookup(current, name)
      let isLast = pending.isEmpty
      if attributes.st_mode & UInt32(S_IFMT) == UInt32(S_IFLNK) && (!isLast || followLast) {
        links += 1
        if links > 40 { throw Errno.tooManySymbolicLinkLevels }
        let target = try fileSystem.readLink(inode: UInt64(attributes.st_ino))
        let targetComponents = target.split(
          separator: UInt8(ascii: "/"), omittingEmptySubsequences: true
        ).map(Array.init)
        if target.first == UInt8(ascii: "/") { current = root }
        pending = targetComponents + pending
        continue
      }
      if !isLast && attributes.st_mode & UInt32(S_IFMT) != UInt32(S_IFDIR) {
        throw Errno.notDirectory
      }
      current = UInt64(attributes.st_ino)
    }
    return current
  }

  /// The folder that holds the last component, and that component's name.
  private func resolveParent(_ path: String) throws -> (UInt64, [UInt8]) {
    var parts = components(path)
    guard let name = parts.popLast() else { throw Errno.invalidArgument }
    // Rebuild the prefix from bytes so that no normalisation can creep in.
    var parentPath: [UInt8] = []
    for part in parts {
      parentPath += part + [UInt8(ascii: "/")]
    }
    let parent = try resolve(String(decoding: parentPath, as: UTF8.self))
    let attributes = try fileSystem.attributes(inode: parent)
    if attributes.st_mode & UInt32(S_IFMT) != UInt32(S_IFDIR) { throw Errno.notDirectory }
    return (parent, name)
  }

  private func status(_ attributes: stat) -> FileStatus {
    FileStatus(
      kind: FileKind(mode: attributes.st_mode) ?? .regular,
      permissions: attributes.st_mode & 0o7777, inode: UInt64(attributes.st_ino),
      linkCount: UInt64(attributes.st_nlink), user: attributes.st_uid, group: attributes.st_gid,
      size: Int64(attributes.st_size), blocks: Int64(attributes.st_blocks),
      device: UInt64(attributes.st_rdev),
      accessTime: FileTime(
        seconds: Int64(attributes.st_atim.tv_sec), nanoseconds: Int64(attributes.st_atim.tv_nsec)),
      modificationTime: FileTime(
        seconds: Int64(attributes.st_mtim.tv_sec), nanoseconds: Int64(attributes.st_mtim.tv_nsec)),
      changeTime: FileTime(
        seconds: Int64(attributes.st_ctim.tv_sec), nanoseconds: Int64(attributes.st_ctim.tv_nsec)))
  }

  /// Runs `body` with a new id, under the lock.
  private func register(_ body: (UInt64) -> Void) -> UInt64 {
    lock.withLock {
      let id = nextId
      nextId += 1
      body(id)
      return id
    }
  }

  private func file(_ file: FileSystemConformance.OpenFile) throws -> (
    inode: UInt64, handle: UInt64?, append: Bool
  ) {
    guard let entry = lock.withLock({ files[file.id] }) else { throw Errno.badFileDescriptor }
    return entry
  }

  // MARK: Attributes

  func status(_ path: String, followSymlinks: Bool) throws -> FileStatus {
    status(try fileSystem.attributes(inode: resolve(path, followLast: followSymlinks)))
  }

  func status(of file: FileSystemConformance.OpenFile) throws -> FileStatus {
    status(try fileSystem.attributes(inode: self.file(file).inode))
  }

  func status(of directory: OpenDirectory) throws -> FileStatus {
    guard let (inode, _, _) = lock.withLock({ directories[directory.id] }) else {
      throw Errno.badFileDescriptor
    }
    return status(try fileSystem.attributes(inode: inode))
  }

  func setMode(_ path: String, _ mode: UInt32) throws {
    _ = try fileSystem.setAttributes(
      inode: resolve(path), update: AttributeUpdate(mode: mode), caller: requester)
  }

  func setOwner(_ path: String, user: UInt32?, group: UInt32?) throws {
    _ = try fileSystem.setAttributes(
      inode: resolve(path), update: AttributeUpdate(uid: user, gid: group), caller: requester)
  }

  func setTimes(_ path: String, access: TimeUpdate, modification: TimeUpdate) throws {
    func time(_ update: TimeUpdate) -> AttributeUpdate.Time? {
      switch update {
      case .omit: nil
      case .now: .now
      // As DocumentMount passes a timespec on: clamped, never an overflow.
      case .set(let t): .clamped(seconds: t.seconds, nanoseconds: t.nanoseconds)
      }
    }
    _ = try fileSystem.setAttributes(
      inode: resolve(path),
      update: AttributeUpdate(accessTime: time(access), modificationTime: time(modification)),
      caller: requester)
  }

  func truncate(_ path: String, size: Int64) throws {
    _ = try fileSystem.setAttributes(
      inode: resolve(path), update: AttributeUpdate(size: size), caller: requester)
  }

  func access(_ path: String, _ mode: AccessMode) throws {
    try fileSystem.access(inode: resolve(path), mask: mode.rawValue, caller: requester)
  }

  func fileSystemStatus(_ path: String) throws -> FileSystemStatus {
    _ = try resolve(path)
    let s = try fileSystem.statistics()
    return FileSystemStatus(
      blockSize: UInt64(s.f_frsize), blocks: UInt64(s.f_blocks), freeBlocks: UInt64(s.f_bfree),
      availableBlocks: UInt64(s.f_bavail), files: UInt64(s.f_files),
      freeFiles: UInt64(s.f_ffree), nameMaximum: UInt64(s.f_namemax))
  }

  // MARK: Directories

  func makeDirectory(_ path: String, mode: UInt32) throws {
    let (parent, name) = try resolveParent(path)
    let attributes = try fileSystem.makeDirectory(
      parent: parent, name: name, mode: mode & ~umaskBits, caller: requester)
    fileSystem.forget(inode: UInt64(attributes.st_ino), count: 1)
  }

  func removeDirectory(_ path: String) throws {
    let (parent, name) = try resolveParent(path)
    try fileSystem.removeDirectory(parent: parent, name: name, caller: requester)
  }

  func openDirectory(_ path: String) throws -> OpenDirectory {
    let inode = try resolve(path)
    let attributes = try fileSystem.attributes(inode: inode)
    if attributes.st_mode & UInt32(S_IFMT) != UInt32(S_IFDIR) { throw Errno.notDirectory }
    let handle = try fileSystem.openDirectory(inode: inode, caller: requester)
    return OpenDirectory(id: register { directories[$0] = (inode, handle, 0) })
  }

  func readDirectory(_ directory: OpenDirectory, maximumCount: Int) throws -> [DirectoryEntry] {
    guard let state = lock.withLock({ directories[directory.id] }) else {
      throw Errno.badFileDescriptor
    }
    var entries: [DirectoryEntry] = []
    var offset = state.offset
    try fileSystem.readDirectory(
      inode: state.inode, handle: state.handle, offset: state.offset, plus: false
    ) { entry in
      guard entries.count < maximumCount else { return false }
      entries.append(
        DirectoryEntry(
          name: String(decoding: entry.name, as: UTF8.self), inode: entry.inode,
          kind: FileKind(mode: entry.type)))
      offset = entry.nextOffset
      return true
    }
    lock.withLock { directories[directory.id]?.offset = offset }
    return entries
  }

  func synchronize(_ directory: OpenDirectory) throws {
    guard let state = lock.withLock({ directories[directory.id] }) else {
      throw Errno.badFileDescriptor
    }
    try fileSystem.synchronizeDirectory(inode: state.inode)
  }

  func close(_ directory: OpenDirectory) throws {
    guard let state = lock.withLock({ directories.removeValue(forKey: directory.id) }) else {
      throw Errno.badFileDescriptor
    }
    fileSystem.releaseDirectory(handle: state.handle)
  }

  // MARK: Files

  func open(_ path: String, _ options: OpenOptions, mode: UInt32) throws
    -> FileSystemConformance.OpenFile
  {
    var flags: Int32 =
      options.contains(.write) ? (options.contains(.read) ? O_RDWR : O_WRONLY) : O_RDONLY
    if options.contains(.append) { flags |= O_APPEND }
    let (parent, name) = try resolveParent(path)
    var inode: UInt64
    do {
      let attributes = try lookup(parent, name)
      if options.contains(.create) && options.contains(.exclusive) { throw Errno.fileExists }
      let isLink = attributes.st_mode & UInt32(S_IFMT) == UInt32(S_IFLNK)
      if isLink && options.contains(.noFollow) { throw Errno.tooManySymbolicLinkLevels }
      inode = isLink ? try resolve(path) : UInt64(attributes.st_ino)
    } catch Errno.noSuchFileOrDirectory where options.contains(.create) {
      let (attributes, opened) = try fileSystem.create(
        parent: parent, name: name, mode: mode & ~umaskBits, flags: flags, caller: requester)
      fileSystem.forget(inode: UInt64(attributes.st_ino), count: 1)
      let append = options.contains(.append)
      return FileSystemConformance.OpenFile(
        id: register { files[$0] = (UInt64(attributes.st_ino), opened.handle, append) })
    }
    let attributes = try fileSystem.attributes(inode: inode)
    let isDirectory = attributes.st_mode & UInt32(S_IFMT) == UInt32(S_IFDIR)
    if options.contains(.directory) && !isDirectory { throw Errno.notDirectory }
    if isDirectory {
      if options.contains(.write) { throw Errno.isDirectory }
      return FileSystemConformance.OpenFile(id: register { files[$0] = (inode, nil, false) })
    }
    let opened = try fileSystem.open(inode: inode, flags: flags, caller: requester)
    // As Linux: O_TRUNC truncates whatever the access mode (it then needs write permission).
    if options.contains(.truncate) {
      _ = try fileSystem.setAttributes(
        inode: inode, update: AttributeUpdate(size: 0, handle: opened.handle), caller: requester)
    }
    let append = options.contains(.append)
    return FileSystemConformance.OpenFile(
      id: register { files[$0] = (inode, opened.handle, append) })
  }

  func read(_ file: FileSystemConformance.OpenFile, at offset: Int64, count: Int) throws -> [UInt8]
  {
    guard let handle = try self.file(file).handle else { throw Errno.isDirectory }
    return try fileSystem.read(handle: handle, offset: offset, count: count)
  }

  func write(_ file: FileSystemConformance.OpenFile, _ bytes: [UInt8], at offset: Int64) throws
    -> Int
  {
    let entry = try self.file(file)
    guard let handle = entry.handle else { throw Errno.badFileDescriptor }
    let position =
      entry.append ? Int64(try fileSystem.attributes(inode: entry.inode).st_size) : offset
    return try bytes.withUnsafeBytes {
      try fileSystem.write(handle: handle, data: $0, offset: position)
    }
  }

  func allocate(_ file: FileSystemConformance.OpenFile, mode: Int32, offset: Int64, length: Int64)
    throws
  {
    guard let handle = try self.file(file).handle else { throw Errno.badFileDescriptor }
    try fileSystem.allocate(handle: handle, mode: mode, offset: offset, length: length)
  }

  func truncate(_ file: FileSystemConformance.OpenFile, size: Int64) throws {
    let entry = try self.file(file)
    guard let handle = entry.handle else { throw Errno.invalidArgument }
    _ = try fileSystem.setAttributes(
      inode: entry.inode, update: AttributeUpdate(size: size, handle: handle), caller: requester)
  }

  func synchronize(_ file: FileSystemConformance.OpenFile, dataOnly: Bool) throws {
    let entry = try self.file(file)
    guard let handle = entry.handle else {
      try fileSystem.synchronizeDirectory(inode: entry.inode)
      return
    }
    try fileSystem.synchronize(handle: handle, dataOnly: dataOnly)
  }

  func close(_ file: FileSystemConformance.OpenFile) throws {
    guard let entry = lock.withLock({ files.removeValue(forKey: file.id) }) else {
      throw Errno.badFileDescriptor
    }
    if let handle = entry.handle {
      try fileSystem.flush(handle: handle)
      fileSystem.release(handle: handle)
    }
  }

  func removeFile(_ path: String) throws {
    let (parent, name) = try resolveParent(path)
    try fileSystem.unlink(parent: parent, name: name, caller: requester)
  }

  func rename(_ source: String, to destination: String, flags: FileSystemConformance.RenameFlags)
    throws
  {
    let (from, name) = try resolveParent(source)
    let (to, newName) = try resolveParent(destination)
    try fileSystem.rename(
      parent: from, name: name, newParent: to, newName: newName,
      options: RenameOptions(rawValue: flags.rawValue), caller: requester)
  }

  // MARK: Links and special files

  func makeSymbolicLink(_ path: String, target: String) throws {
    let (parent, name) = try resolveParent(path)
    let attributes = try fileSystem.symlink(
      target: Array(target.utf8), parent: parent, name: name, caller: requester)
    fileSystem.forget(inode: UInt64(attributes.st_ino), count: 1)
  }

  func readSymbolicLink(_ path: String) throws -> String {
    String(
      decoding: try fileSystem.readLink(inode: resolve(path, followLast: false)), as: UTF8.self)
  }

  func makeHardLink(_ path: String, to existing: String) throws {
    let inode = try resolve(existing, followLast: false)
    let (parent, name) = try resolveParent(path)
    let attributes = try fileSystem.link(
      inode: inode, newParent: parent, newName: name, caller: requester)
    fileSystem.forget(inode: UInt64(attributes.st_ino), count: 1)
  }

  func makeNode(_ path: String, kind: FileKind, mode: UInt32, device: UInt64) throws {
    let (parent, name) = try resolveParent(path)
    let attributes = try fileSystem.makeNode(
      parent: parent, name: name, mode: kind.modeBits | (mode & 0o7777 & ~umaskBits),
      device: device, caller: requester)
    fileSystem.forget(inode: UInt64(attributes.st_ino), count: 1)
  }

  // MARK: Extended attributes

  func extendedAttributeSize(_ path: String, name: String) throws -> Int {
    try fileSystem.extendedAttribute(
      inode: resolve(path), name: Array(name.utf8), caller: requester
    ).count
  }

  func getExtendedAttribute(_ path: String, name: String, capacity: Int) throws -> [UInt8] {
    let value = try fileSystem.extendedAttribute(
      inode: resolve(path), name: Array(name.utf8), caller: requester)
    if value.count > capacity { throw Errno.outOfRange }
    return value
  }

  func setExtendedAttribute(
    _ path: String, name: String, value: [UInt8], flags: ExtendedAttributeFlags
  ) throws {
    let inode = try resolve(path)
    try value.withUnsafeBytes {
      try fileSystem.setExtendedAttribute(
        inode: inode, name: Array(name.utf8), value: $0, flags: flags.rawValue, caller: requester)
    }
  }

  func listExtendedAttributes(_ path: String) throws -> [String] {
    try fileSystem.extendedAttributeNames(inode: resolve(path)).map {
      String(decoding: $0, as: UTF8.self)
    }
  }

  func removeExtendedAttribute(_ path: String, name: String) throws {
    try fileSystem.removeExtendedAttribute(
      inode: resolve(path), name: Array(name.utf8), caller: requester)
  }
}

/// A plain mutex for the adapter's own tables.
final class NSLockLike: @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  init() { pthread_mutex_init(&mutex, nil) }
  func withLock<T>(_ body: () throws -> T) rethrows -> T {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return try body()
  }
}
