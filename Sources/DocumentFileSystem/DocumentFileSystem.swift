import DocumentModel
import Glibc
import LocalStore
import SyncEngine
import Synchronization
import SystemPackage

/// The changes that one setattr asks for; nil means unchanged.
public struct AttributeUpdate: Sendable {
  /// A time to set: now, or a given time.
  public enum Time: Sendable {
    case now
    case nanoseconds(Int64)

    /// A `timespec`'s fields, clamped to the range docsync keeps and syncs
    /// (``EpochNanoseconds``) rather than overflowing.
    public static func clamped(seconds: Int64, nanoseconds: Int64) -> Time {
      .nanoseconds(EpochNanoseconds.clamped(seconds: seconds, nanoseconds: nanoseconds))
    }
  }

  public var mode: UInt32?
  public var uid: UInt32?
  public var gid: UInt32?
  public var size: Int64?
  public var accessTime: Time?
  public var modificationTime: Time?
  /// The open file the change came through (ftruncate, futimens), if any.
  public var handle: UInt64?
  /// Clear setuid, and setgid where the group may execute (a truncate by a caller without
  /// CAP_FSETID, or a chown), unless the update sets the mode itself.
  public var clearSetID: Bool

  public init(
    mode: UInt32? = nil, uid: UInt32? = nil, gid: UInt32? = nil, size: Int64? = nil,
    accessTime: Time? = nil, modificationTime: Time? = nil, handle: UInt64? = nil,
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

/// The flags of renameat2.
public struct RenameOptions: OptionSet, Sendable {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }
  public static let noReplace = RenameOptions(rawValue: 1)
  public static let exchange = RenameOptions(rawValue: 2)
  /// The flags docsync carries out; rename refuses any other with EINVAL.
  public static let supported: RenameOptions = [.noReplace, .exchange]
}

/// An entry of a folder listing; `attributes` is filled when the listing asked for them.
public struct ListingEntry {
  public var name: [UInt8]
  public var inode: UInt64
  /// The file type bits of `st_mode`.
  public var type: UInt32
  public var nextOffset: Int64
  public var attributes: stat?
}

/// docsync's file-system semantics, by inode and name, with no knowledge of FUSE.
///
/// The live tree is in memory under one lock and written through to the `LocalStore`, one
/// transaction per operation, before the operation answers. File content goes straight to the
/// working files, outside the lock.
public final class DocumentFileSystem: @unchecked Sendable {
  public static let rootInode: UInt64 = 1
  /// The reserved, virtual `.versions` folder at the root.
  public static let versionsInode: UInt64 = 2
  public static let versionsName: [UInt8] = Array(".versions".utf8)
  /// The reserved, virtual and hidden `.history` folder at the root.
  public static let historyInode: UInt64 = 3
  public static let historyName: [UInt8] = Array(".history".utf8)
  public static let nameMax = 255
  /// Inode numbers below this are reserved for virtual nodes.
  static let firstInode: UInt64 = 16

  let store: LocalStore
  /// The sync engine that this file system reports local changes to, if it syncs.
  public let engine: SyncEngine?
  /// Invalidations for the kernel, sent by the FUSE adapter from a thread of its own.
  public let invalidations = InvalidationQueue()
  /// Sync's changes, raised again through the mount for programs that watch files.
  public let announcements = AnnouncementQueue()
  /// Whether a remote version that only appends to a file open for reading lands in that
  /// file, so that the readers see the new end (`tail -f`); off where the kernel reads the
  /// working file itself (passthrough), which cannot be pointed at the new content.
  public let readersFollowAppends = Atomic<Bool>(false)
  let lock = TreeLock()
  /// Set while the sync engine writes into the tree, so its changes are not noted as local.
  var suppressNotes = false
  let versions = VersionsTree()
  let history = HistoryTree()
  var nodes: [UInt64: Node] = [:]
  var nextInode: UInt64
  /// The store's `next_inode`: no number from here on has been handed out. It runs ahead of
  /// ``nextInode`` by up to ``inodeReservation``, so that a create rarely writes it.
  var reservedInodes: UInt64
  /// Open files by handle (the working file's descriptor): the inode and whether it may write.
  var openFiles: [UInt64: (inode: UInt64, writable: Bool)] = [:]
  /// Writable handles that have been flushed (a close(2) of their descriptor) but not released.
  var flushedHandles: Set<UInt64> = []
  var directoryHandles: [UInt64: DirectoryHandle] = [:]
  var nextDirectoryHandle: UInt64 = 1
  /// The permission bits that what docsync makes by itself leaves out (the mount's umask): the
  /// root, files and folders that arrive from other devices, and the `.versions` tree.
  public let creationMask: UInt32
  /// Whether operations check the caller's permissions themselves, as a local disk would:
  /// for mounts where the kernel does not (no `default_permissions`).
  public let checksPermissions: Bool
  /// The lowest descriptor number an open on the mount may not keep (see ``admit(_:)``).
  public let descriptorCeiling: Int32

  /// Loads the tree of `store`, creating an empty root owned by `owner` on first use;
  /// `creationMask` defaults to this process's umask, `descriptorCeiling` to this process's
  /// limit on open descriptors less a reserve (``descriptorCeiling(forLimit:)``).
  public init(
    store: LocalStore, engine: SyncEngine? = nil, owner: Caller = .current,
    creationMask: UInt32? = nil, checksPermissions: Bool = false, descriptorCeiling: Int32? = nil
  ) throws(Errno) {
    self.store = store
    self.engine = engine
    self.checksPermissions = checksPermissions
    self.descriptorCeiling =
      descriptorCeiling ?? Self.descriptorCeiling(forLimit: Self.openFileLimit())
    self.creationMask = (creationMask ?? Self.processUmask()) & 0o777
    FileClock.adopt(directory: store.workingFiles)
    // The rows come one at a time and become nodes at once: a large tree's rows are never all
    // in memory beside its nodes.
    var loaded: [UInt64: Node] = [:]
    var lastInode: UInt64 = 0
    var dangling: [Change] = []
    var root: InodeRecord?
    let newFolderMode = 0o777 & ~self.creationMask
    let link = { (entry: EntryRecord) in
      if loaded[Self.rootInode] == nil {
        let now = currentTime()
        let record = InodeRecord(
          inode: Self.rootInode, mode: UInt32(S_IFDIR) | newFolderMode, uid: owner.uid,
          gid: owner.gid,
          rdev: 0, accessTime: now, modificationTime: now, changeTime: now, target: nil)
        root = record
        loaded[Self.rootInode] = Node(record: record)
      }
      guard let parent = loaded[entry.parent], let child = loaded[entry.inode] else {
        dangling.append(.deleteEntry(parent: entry.parent, name: entry.name))
        return
      }
      parent.children[entry.name] = entry.inode
      child.linkCount += 1
      child.names.append((entry.parent, entry.name))
      if child.isDirectory {
        child.parent = entry.parent
        parent.subdirectories += 1
      }
    }
    let snapshot: Snapshot
    do {
      snapshot = try store.load(
        eachInode: { record in
          loaded[record.inode] = Node(record: record)
          lastInode = max(lastInode, record.inode)
        },
        eachEntry: link)
    } catch {
      throw .ioError
    }
    nextInode = max(snapshot.nextInode, Self.firstInode, lastInode + 1)
    reservedInodes = snapshot.nextInode
    nodes = loaded
    loaded = [:]
    if nodes[Self.rootInode] == nil || root != nil {
      let now = currentTime()
      let record =
        root
        ?? InodeRecord(
          inode: Self.rootInode, mode: UInt32(S_IFDIR) | folderMode, uid: owner.uid,
          gid: owner.gid,
          rdev: 0, accessTime: now, modificationTime: now, changeTime: now, target: nil)
      try persistNewInode([.putInode(record)])
      if nodes[Self.rootInode] == nil { nodes[Self.rootInode] = Node(record: record) }
    }
    nodes[Self.rootInode]!.linkCount = 1
    nodes[Self.rootInode]!.lookups = 1
    for attribute in snapshot.extendedAttributes {
      nodes[attribute.inode]?.extendedAttributes[attribute.name] = attribute.value
    }
    // A crash can leave inodes that no entry names (unlinked while open) and working files
    // whose inode is gone: both are garbage now that no process holds them.
    for node in nodes.values where node.linkCount == 0 {
      dangling.append(.deleteInode(node.inode))
      nodes[node.inode] = nil
    }
    if !dangling.isEmpty { try persist(dangling) }
    removeStrayWorkingFiles()
    store.removeIncomingLeftovers()
    store.prepareWorkingFiles(from: nextInode)
  }

  // MARK: - Helpers shared by the operation files

  /// The mode of a folder that docsync makes by itself.
  var folderMode: UInt32 { 0o777 & ~creationMask }
  /// The mode of a file that docsync makes by itself, before its executable bit.
  var fileMode: UInt32 { 0o666 & ~creationMask }

  /// This process's umask, read from /proc so that it is never changed, not even for a
  /// moment while other threads create files (`umask(2)` can only be read by setting it).
  static func processUmask() -> UInt32 {
    if let field = ProcessStatus.field("Umask", of: "self"), let mask = UInt32(field, radix: 8) {
      return mask
    }
    let mask = umask(0o022)
    umask(mask)
    return UInt32(mask)
  }

  func persist(_ changes: [Change]) throws(Errno) {
    do {
      try store.apply(changes)
    } catch {
      throw Self.refusal(for: error)
    }
  }

  /// What a request answers when the state database cannot be written: ENOSPC for a full
  /// disk (`mkdir: No space left on device`, which says what to do), EIO for anything else.
  static func refusal(for error: LocalStoreError) -> Errno {
    if case .full = error { return .noSpace }
    return .ioError
  }

  /// Commits the tree's queued changes and makes them durable against power loss: the point
  /// where fsync and fsyncdir promise the names and attributes made before them. Called
  /// without the tree's lock, which other requests must not wait on while the disk flushes.
  func flushTree() throws(Errno) {
    do {
      try store.flush()
    } catch {
      throw Self.refusal(for: error)
    }
    store.syncJournal()
  }

  func node(_ inode: UInt64) throws(Errno) -> Node {
    guard let node = nodes[inode] else { throw .noSuchFileOrDirectory }
    return node
  }

  func directory(_ inode: UInt64) throws(Errno) -> Node {
    guard let node = nodes[inode] else {
      throw Self.isVirtual(inode) ? .readOnlyFileSystem : .noSuchFileOrDirectory
    }
    guard node.isDirectory else { throw .notDirectory }
    return node
  }

  static func validate(name: [UInt8]) throws(Errno) {
    if name.count > nameMax { throw .fileNameTooLong }
    if name.isEmpty || name.contains(UInt8(ascii: "/")) { throw .invalidArgument }
  }

  /// Whether `name` is `.` or `..`, without building either to compare (lookup asks this of
  /// every name).
  static func isDotOrDotDot(_ name: [UInt8]) -> Bool {
    (name.count == 1 || name.count == 2) && name.allSatisfy { $0 == UInt8(ascii: ".") }
  }

  static func isReserved(parent: UInt64, name: [UInt8]) -> Bool {
    parent == rootInode && (name == versionsName || name == historyName)
  }

  /// Checks a name that is about to be created in `parent`.
  func prepareNewName(parent: UInt64, name: [UInt8], caller: Caller) throws(Errno) -> Node {
    if Self.isVirtual(parent) { throw .readOnlyFileSystem }
    try Self.validate(name: name)
    let folder = try directory(parent)
    if folder.isRemoved { throw .noSuchFileOrDirectory }
    if Self.isReserved(parent: parent, name: name) || folder.children[name] != nil {
      throw .fileExists
    }
    try require(AccessCheck.write | AccessCheck.execute, folder, caller)
    return folder
  }

  func allocateInode() -> UInt64 {
    defer { nextInode += 1 }
    return nextInode
  }

  /// How many inode numbers one write of the store's `next_inode` sets aside. A number that a
  /// committed change names is never handed out again, even after a crash: the reservation
  /// that covers it commits with it or before it, and a restart starts above it. Writing the
  /// counter with every create cost each create's commit two more pages in the journal (the
  /// `meta` row and its key's index). A restart skips what is left of the reservation: at
  /// most this many numbers of 2^64.
  public static let inodeReservation: UInt64 = 4096

  /// Persists the changes that add a new inode, with a new reservation of numbers in the same
  /// transaction when the numbers handed out have reached the store's `next_inode`.
  func persistNewInode(_ changes: [Change]) throws(Errno) {
    guard nextInode > reservedInodes else { return try persist(changes) }
    let reserved = nextInode + Self.inodeReservation
    try persist(changes + [.setNextInode(reserved)])
    reservedInodes = reserved
  }

  func workingFileName(_ inode: UInt64) -> String { LocalStore.workingFileName(inode) }

  /// Changes the working file's ctime, since a rename, link or chmod is a change of the inode
  /// that the kernel cannot see on the working file itself.
  func touchChangeTime(_ node: Node) {
    if node.isRegular {
      store.content.touchChangeTime(of: node.inode)
    } else {
      node.changeTime = currentTime()
    }
  }

  /// `touchChangeTime` for the node a rename moved, noting a regular file's ctime before and
  /// after (`Node.renameChangeTimes`): 10,000 renames of clean files were each read and hashed
  /// again when their window was recorded, which kept an unmount waiting (issue 45).
  func touchChangeTimeForRename(_ node: Node) {
    guard node.isRegular else { return touchChangeTime(node) }
    let before = workingFileChangeTime(node)
    touchChangeTime(node)
    guard let before, let after = workingFileChangeTime(node) else {
      node.renameChangeTimes = nil
      return
    }
    // Renames in a row keep the first ctime; anything else between them shows as a ctime
    // other than the last rename's.
    if let previous = node.renameChangeTimes, previous.after == before {
      node.renameChangeTimes = (previous.before, after)
    } else {
      node.renameChangeTimes = (before, after)
    }
  }

  private func workingFileChangeTime(_ node: Node) -> Int64? {
    guard let info = store.content.workingFileStatus(node.inode) else { return nil }
    return nanoseconds(info.st_ctim)
  }

  /// Drops an inode that no name, lookup or open file refers to any more.
  func reapIfUnused(_ node: Node) {
    guard node.isRemoved, node.lookups == 0, node.openCount == 0, node.inode != Self.rootInode
    else { return }
    nodes[node.inode] = nil
    // After the commit that drops the inode: a crash before it must still find the file.
    if node.isRegular { store.removeWorkingFile(node.inode) }
  }

  private func removeStrayWorkingFiles() {
    store.content.removeStrayWorkingFiles(keeping: { nodes[$0]?.isRegular == true })
  }

  // MARK: - Attributes

  /// `descriptor`, when given, is the working file open already (a create): fstat needs no
  /// walk of its name.
  func attributes(_ node: Node, descriptor: Int32? = nil) throws(Errno) -> stat {
    var result = stat()
    if node.isRegular {
      if let descriptor {
        guard fstat(descriptor, &result) == 0 else { throw .ioError }
      } else {
        guard let info = store.content.workingFileStatus(node.inode) else { throw .ioError }
        result = info
      }
    } else {
      result.st_atim = timespecFrom(nanoseconds: node.accessTime)
      result.st_mtim = timespecFrom(nanoseconds: node.modificationTime)
      result.st_ctim = timespecFrom(nanoseconds: node.changeTime)
      if node.isDirectory {
        // As ext4 reports a folder, so that `du` agrees with a plain copy.
        result.st_size = 4096
        result.st_blocks = 8
      } else if let target = node.target {
        result.st_size = target.count
      }
    }
    result.st_ino = UInt(node.inode)
    result.st_mode = node.mode
    result.st_uid = node.uid
    result.st_gid = node.gid
    result.st_rdev = UInt(node.rdev)
    // A removed folder (rmdir, or replaced by a rename while open) has no links, "." included,
    // as on a local disk: `fstat` of it shows 0.
    result.st_nlink =
      node.isRemoved ? 0 : UInt(node.isDirectory ? 2 + node.subdirectories : node.linkCount)
    result.st_blksize = 4096
    return result
  }

  func versionsAttributes() -> stat {
    let root = nodes[Self.rootInode]!
    var result = stat()
    result.st_ino = UInt(Self.versionsInode)
    // The owner may write the folders of `.versions`, so that `rm`, `rm -r` and `mv` out
    // pass the permission checks (the kernel's or docsync's) and a file manager offers
    // them; creating, renaming within and writing are refused by the operations themselves.
    result.st_mode = UInt32(S_IFDIR) | (root.mode & 0o555) | 0o200
    result.st_nlink = 2
    result.st_uid = root.uid
    result.st_gid = root.gid
    result.st_size = 4096
    result.st_blocks = 8
    result.st_blksize = 4096
    let time = timespecFrom(nanoseconds: root.changeTime)
    result.st_atim = time
    result.st_mtim = time
    result.st_ctim = time
    return result
  }

  /// The attributes of an inode.
  public func attributes(inode: UInt64) throws(Errno) -> stat {
    if Self.isVirtual(inode) { return try virtualAttributes(inode) }
    return try lock.withLock { () throws(Errno) -> stat in
      return try attributes(node(inode))
    }
  }

  /// Finds `name` in `parent`; the kernel then holds one more reference to the inode.
  public func lookup(parent: UInt64, name: [UInt8], caller: Caller) throws(Errno) -> stat {
    if Self.isVirtual(parent) {
      try requireVirtual(AccessCheck.execute, parent, caller)
      return try virtualLookup(parent: parent, name: name)
    }
    return try lock.withLock { () throws(Errno) -> stat in
      let folder = try directory(parent)
      try require(AccessCheck.execute, folder, caller)
      if Self.isDotOrDotDot(name) {
        let target = try node(name.count == 1 || parent == Self.rootInode ? parent : folder.parent)
        target.lookups += 1
        return try attributes(target)
      }
      try Self.validate(name: name)
      if Self.isReserved(parent: parent, name: name) {
        return name == Self.historyName ? historyRootAttributes() : versionsAttributes()
      }
      guard let inode = folder.children[name], let child = nodes[inode] else {
        throw .noSuchFileOrDirectory
      }
      child.lookups += 1
      return try attributes(child)
    }
  }

  /// The kernel drops `count` references to an inode.
  public func forget(inode: UInt64, count: UInt64) {
    lock.withLock {
      guard let node = nodes[inode] else { return }
      node.lookups -= min(node.lookups, count)
      reapIfUnused(node)
    }
  }

  /// Applies chmod, chown, truncate and utimens.
  public func setAttributes(inode: UInt64, update: AttributeUpdate, caller: Caller) throws(Errno)
    -> stat
  {
    if Self.isVirtual(inode) { throw .readOnlyFileSystem }
    return try lock.withLock { () throws(Errno) -> stat in
      let node = try node(inode)
      try requireMayChange(node, update, caller)
      let (oldMode, oldUID, oldGID) = (node.mode, node.uid, node.gid)
      if let size = update.size {
        guard node.isRegular else { throw node.isDirectory ? .isDirectory : .invalidArgument }
        if size < 0 { throw .invalidArgument }
        if let handle = update.handle, openFiles[handle]?.inode == inode {
          try store.content.truncate(descriptor: Int32(handle), to: size)
        } else {
          try store.content.truncateWorkingFile(inode, to: size)
        }
      }
      var changed = false
      if let mode = update.mode {
        let allowed =
          checksPermissions
          ? AccessCheck.modeAfterChange(mode, gid: node.gid, caller: caller) : mode
        node.mode = node.type | (allowed & 0o7777)
        changed = true
      } else if update.clearSetID, !node.isDirectory, Self.clearingSetID(node.mode) != node.mode {
        node.mode = Self.clearingSetID(node.mode)
        changed = true
      }
      if let uid = update.uid {
        node.uid = uid
        changed = true
      }
      if let gid = update.gid {
        node.gid = gid
        changed = true
      }
      if update.accessTime != nil || update.modificationTime != nil {
        if node.isRegular {
          func spec(_ time: AttributeUpdate.Time?) -> timespec {
            switch time {
            case nil: timespec(tv_sec: 0, tv_nsec: utimeOmit)
            case .now: timespec(tv_sec: 0, tv_nsec: utimeNow)
            case .nanoseconds(let value): timespecFrom(nanoseconds: value)
            }
          }
          let times = [spec(update.accessTime), spec(update.modificationTime)]
          try store.content.setTimes(of: inode, times)
        } else {
          let now = currentTime()
          func value(_ time: AttributeUpdate.Time) -> Int64 {
            if case .nanoseconds(let value) = time { return value }
            return now
          }
          if let time = update.accessTime { node.accessTime = value(time) }
          if let time = update.modificationTime { node.modificationTime = value(time) }
          node.changeTime = now
          changed = true
        }
      }
      if changed {
        touchChangeTime(node)
        try persist([.putInode(node.record)])
        dropCachedNamesIfSearchLost(node, oldMode: oldMode, oldUID: oldUID, oldGID: oldGID)
      }
      if update.size != nil || update.mode != nil || update.modificationTime != nil {
        noteWrite(node)
      }
      return try attributes(node)
    }
  }

  /// The target of a symbolic link.
  public func readLink(inode: UInt64) throws(Errno) -> [UInt8] {
    if Self.isVirtual(inode) { throw .invalidArgument }
    return try lock.withLock { () throws(Errno) -> [UInt8] in
      guard let target = try node(inode).target else { throw .invalidArgument }
      return target
    }
  }

  /// Checks permission bits as `access(2)` does.
  public func access(inode: UInt64, mask: Int32, caller: Caller) throws(Errno) {
    try lock.withLock { () throws(Errno) in
      let mode: UInt32
      let uid: UInt32
      let gid: UInt32
      if Self.isVirtual(inode) {
        let attributes = try virtualAttributes(inode)
        (mode, uid, gid) = (attributes.st_mode, attributes.st_uid, attributes.st_gid)
        let isFolder = mode & UInt32(S_IFMT) == UInt32(S_IFDIR)
        if mask & W_OK != 0 && !isFolder { throw .readOnlyFileSystem }
      } else {
        let node = try node(inode)
        (mode, uid, gid) = (node.mode, node.uid, node.gid)
      }
      if mask == F_OK { return }
      // FUSE_ACCESS comes only where the kernel leaves modes to docsync, so it always checks.
      if !AccessCheck.allows(UInt32(mask) & 7, mode: mode, uid: uid, gid: gid, caller: caller) {
        throw .permissionDenied
      }
    }
  }

  /// Space on the disk that holds the working files.
  public func statistics() throws(Errno) -> statvfs {
    var result = statvfs()
    guard fstatvfs(store.workingFiles, &result) == 0 else { throw Errno(rawValue: errno) }
    result.f_namemax = UInt(Self.nameMax)
    return result
  }

  /// Flushes what is pending and folds the journal into the database, at unmount.
  public func shutdown() {
    lock.withLock {
      store.syncJournal()
      store.checkpoint()
    }
  }
}

// UTIME_NOW and UTIME_OMIT are macros that Glibc's module does not export.
let utimeNow = (1 << 30) - 1
let utimeOmit = (1 << 30) - 2

/// A folder opened for listing; the listing is taken when reading starts at offset 0, so that
/// offsets stay valid while the folder changes.
final class DirectoryHandle {
  let inode: UInt64
  var entries: [(name: [UInt8], inode: UInt64, type: UInt32)] = []

  init(inode: UInt64) { self.inode = inode }
}
