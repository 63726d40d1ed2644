import DocumentFileSystem
import Foundation
import FuseLowLevel
import Glibc
import Synchronization
import SystemPackage

/// Serves a `DocumentFileSystem` to the kernel: translation only, no file-system rules.
public final class DocumentMount: LowLevelFileSystem {
  public let fileSystem: DocumentFileSystem
  /// How long the kernel may trust names and attributes. A day, as passthrough_ll's
  /// cache=always: every local change goes through this mount, and whatever sync changes behind
  /// the kernel (content, mode, names, folders) it invalidates through `startInvalidations`.
  let timeout: Double
  /// Set by `startInvalidations`; a write that clears set-ID bits tells the kernel at once.
  private let notifier = Mutex<KernelNotifier?>(nil)

  public init(fileSystem: DocumentFileSystem, timeout: Double = 86_400) {
    self.fileSystem = fileSystem
    self.timeout = timeout
  }

  private func caller(_ context: RequestContext) -> Caller {
    Caller(uid: context.uid, gid: context.gid, pid: context.pid)
  }

  private func entry(_ attributes: stat) -> Entry {
    // `.versions` changes with every sync and has no invalidation of its own names: a short
    // timeout, long enough for `rm -r` to find a folder it has just emptied.
    let seconds = DocumentFileSystem.isVirtual(UInt64(attributes.st_ino)) ? 1 : timeout
    return Entry(attributes: attributes, attributeTimeout: seconds, entryTimeout: seconds)
  }

  /// Sends the file system's invalidations to the kernel from a thread of their own, which
  /// holds no lock and serves no request (libfuse's notify calls can wait on the kernel).
  /// With the `mountPoint`, sync's changes also raise the file notifications a local program
  /// would raise (``Announcer``), from a second such thread through a process of its own (the
  /// executable must dispatch ``AnnouncerHelper/argument``); `readersFollowAppends` where the
  /// daemon, not the kernel, reads the working files (no passthrough).
  public func startInvalidations(
    _ notifier: KernelNotifier, mountPoint: String? = nil, readersFollowAppends: Bool = false
  ) {
    fileSystem.readersFollowAppends.store(readersFollowAppends, ordering: .relaxed)
    if let mountPoint {
      Announcer(fileSystem: fileSystem, notifier: notifier, mountPoint: mountPoint).start()
    }
    self.notifier.withLock { $0 = notifier }
    let queue = fileSystem.invalidations
    let thread = Thread {
      while true {
        let batch = queue.next()
        if batch.isEmpty { return }
        for invalidation in batch {
          // ENOENT only says the kernel had nothing cached: nothing to do.
          switch invalidation {
          case .inode(let inode):
            try? notifier.invalidateInode(inode)
          case .entry(let parent, let name):
            try? notifier.invalidateEntry(parent: parent, name: name)
          case .delete(let parent, let child, let name):
            try? notifier.deleteEntry(parent: parent, child: child, name: name)
          }
        }
        queue.markDelivered()
      }
    }
    thread.name = "docsync-invalidations"
    thread.start()
  }

  private func run<T>(_ body: () throws(Errno) -> T) -> Result<T, Errno> {
    do throws(Errno) {
      return .success(try body())
    } catch {
      return .failure(error)
    }
  }

  public func lookup(parent: UInt64, name: [UInt8], context: RequestContext) -> Result<Entry, Errno>
  {
    if fileSystem.isAnnouncer(context.pid) {
      switch fileSystem.announcedLookup(parent: parent, name: name) {
      case .normal: break
      // An error, not a remembered miss: the kernel asks again at the next lookup.
      case .hidden: return .failure(.noSuchFileOrDirectory)
      case .found(let attributes): return .success(entry(attributes))
      }
    }
    let result = run { () throws(Errno) in
      entry(try fileSystem.lookup(parent: parent, name: name, caller: caller(context)))
    }
    if case .success(let found) = result {
      fileSystem.announcements.noteSeen(UInt64(found.attributes.st_ino), by: context.pid)
    }
    // A name that is not there is remembered by the kernel as long as a name that is (git,
    // make and shells look the same missing names up again and again). Names made through
    // the mount reach the kernel's cache anyway, and sync invalidates every name it makes.
    // The views in .versions change without such care, so their misses are not kept.
    if case .failure(.noSuchFileOrDirectory) = result, !DocumentFileSystem.isVirtual(parent) {
      return .success(Entry(attributes: stat(), attributeTimeout: 0, entryTimeout: timeout))
    }
    return result
  }

  public func forget(inode: UInt64, count: UInt64) {
    fileSystem.announcements.noteSeen(inode)
    fileSystem.forget(inode: inode, count: count)
  }

  public func getAttributes(inode: UInt64, handle: UInt64?, context: RequestContext) -> Result<
    AttributeReply, Errno
  > {
    run { () throws(Errno) in
      AttributeReply(
        attributes: try fileSystem.attributes(inode: inode),
        timeout: DocumentFileSystem.isVirtual(inode) ? 1 : timeout)
    }
  }

  public func setAttributes(inode: UInt64, changes: AttributeChanges, context: RequestContext)
    -> Result<AttributeReply, Errno>
  {
    if fileSystem.isAnnouncer(context.pid)
      || changes.handle.map(fileSystem.announcements.isOwnHandle) ?? false
    {
      return run { () throws(Errno) in
        AttributeReply(
          attributes: try fileSystem.announcedAttributes(inode: inode, handle: changes.handle),
          timeout: timeout)
      }
    }
    func time(_ change: TimeChange?) -> AttributeUpdate.Time? {
      switch change {
      case nil: nil
      case .now: .now
      // Any 64-bit second count arrives here (`touch -d 'year 2147483647'`).
      case .time(let t): .clamped(seconds: Int64(t.tv_sec), nanoseconds: Int64(t.tv_nsec))
      }
    }
    let update = AttributeUpdate(
      mode: changes.mode, uid: changes.uid, gid: changes.gid, size: changes.size.map { Int64($0) },
      accessTime: time(changes.accessTime), modificationTime: time(changes.modificationTime),
      handle: changes.handle, clearSetID: changes.clearSetID)
    return run { () throws(Errno) in
      AttributeReply(
        attributes: try fileSystem.setAttributes(
          inode: inode, update: update, caller: caller(context)),
        timeout: timeout)
    }
  }

  public func readLink(inode: UInt64, context: RequestContext) -> Result<[UInt8], Errno> {
    run { () throws(Errno) in try fileSystem.readLink(inode: inode) }
  }

  public func makeNode(
    parent: UInt64, name: [UInt8], mode: mode_t, device: dev_t, context: RequestContext
  ) -> Result<Entry, Errno> {
    if let announced = announcedEntry(parent: parent, name: name, context: context) {
      return announced
    }
    return run { () throws(Errno) in
      entry(
        try fileSystem.makeNode(
          parent: parent, name: name, mode: mode, device: UInt64(device), caller: caller(context)))
    }
  }

  public func makeDirectory(parent: UInt64, name: [UInt8], mode: mode_t, context: RequestContext)
    -> Result<Entry, Errno>
  {
    if let announced = announcedEntry(parent: parent, name: name, context: context) {
      return announced
    }
    return run { () throws(Errno) in
      entry(
        try fileSystem.makeDirectory(
          parent: parent, name: name, mode: mode, caller: caller(context)))
    }
  }

  public func unlink(parent: UInt64, name: [UInt8], context: RequestContext) -> Result<Void, Errno>
  {
    if fileSystem.isAnnouncer(context.pid) {
      return run { () throws(Errno) in try fileSystem.announcedRemoval(parent: parent, name: name) }
    }
    return run { () throws(Errno) in
      try fileSystem.unlink(parent: parent, name: name, caller: caller(context))
    }
  }

  public func removeDirectory(parent: UInt64, name: [UInt8], context: RequestContext) -> Result<
    Void, Errno
  > {
    if fileSystem.isAnnouncer(context.pid) {
      return run { () throws(Errno) in try fileSystem.announcedRemoval(parent: parent, name: name) }
    }
    return run { () throws(Errno) in
      try fileSystem.removeDirectory(parent: parent, name: name, caller: caller(context))
    }
  }

  public func symlink(target: [UInt8], parent: UInt64, name: [UInt8], context: RequestContext)
    -> Result<Entry, Errno>
  {
    if let announced = announcedEntry(parent: parent, name: name, context: context) {
      return announced
    }
    return run { () throws(Errno) in
      entry(
        try fileSystem.symlink(target: target, parent: parent, name: name, caller: caller(context)))
    }
  }

  public func rename(
    parent: UInt64, name: [UInt8], newParent: UInt64, newName: [UInt8], flags: RenameFlags,
    context: RequestContext
  ) -> Result<Void, Errno> {
    if fileSystem.isAnnouncer(context.pid) { return .failure(.notPermitted) }
    return run { () throws(Errno) in
      try fileSystem.rename(
        parent: parent, name: name, newParent: newParent, newName: newName,
        options: RenameOptions(rawValue: flags.rawValue), caller: caller(context))
    }
  }

  public func link(inode: UInt64, newParent: UInt64, newName: [UInt8], context: RequestContext)
    -> Result<Entry, Errno>
  {
    if fileSystem.isAnnouncer(context.pid) { return .failure(.notPermitted) }
    return run { () throws(Errno) in
      entry(
        try fileSystem.link(
          inode: inode, newParent: newParent, newName: newName, caller: caller(context)))
    }
  }

  /// Whether an open's writes go from the writer's memory straight to the daemon
  /// (FOPEN_DIRECT_IO) rather than through the kernel's page cache: for write-only opens.
  /// Without the writeback cache, a cached write copies every byte into new 4 KiB pages of the
  /// inode (this kernel gives FUSE no larger folios) before the same bytes travel to the
  /// daemon; a direct write skips that copy and those pages, which were most of the writer's
  /// time in a stream of 1 MiB writes. The kernel drops cached pages of the written range
  /// before a direct write (and writes back pages dirtied through a mapping first), so other
  /// opens of the file never read stale bytes. A write-only descriptor cannot read or be
  /// mapped, so it loses no cache of its own; what it costs is that the bytes it wrote are
  /// not cached for a later reader, whose first read asks the daemon. Passthrough (root)
  /// drops the flag: the kernel then writes the working file itself.
  static func writesDirectly(_ flags: Int32) -> Bool {
    flags & O_ACCMODE == O_WRONLY
  }

  public func open(inode: UInt64, flags: Int32, context: RequestContext) -> Result<OpenReply, Errno>
  {
    if fileSystem.isAnnouncer(context.pid) {
      return run { () throws(Errno) in
        OpenReply(
          handle: try fileSystem.announcedOpen(inode: inode), directIO: true, keepCache: true)
      }
    }
    return run { () throws(Errno) in
      let file = try fileSystem.open(inode: inode, flags: flags, caller: caller(context))
      if file.stampedAccessTime {
        try? notifier.withLock { $0 }?.invalidateAttributes(inode)
      }
      // keep_cache is safe while every change to the content goes through this mount: sync
      // renames new content only over a file nobody has open, and then invalidates the inode;
      // an open file is never rewritten (its path gets a new inode). With passthrough
      // the kernel reads and writes the working file itself and keeps no cache of its own.
      // Nothing happens at the close of a reader, so it costs no FLUSH request.
      // A write to a set-ID file through passthrough would never reach docsync, which clears
      // the bits (FUSE_HANDLE_KILLPRIV_V2): pjdfstest chmod/12.t kept 04777 after another
      // user's write. Such an open is served with requests unless the inode is passed through
      // already.
      return OpenReply(
        handle: file.handle, directIO: Self.writesDirectly(flags), keepCache: true,
        noFlush: flags & O_ACCMODE == O_RDONLY, backingFile: file.descriptor,
        passesThroughOnlyWhenShared: file.writesMayClearSetID)
    }
  }

  public func read(
    inode: UInt64, handle: UInt64, offset: Int64, size: Int, context: RequestContext
  ) -> Result<ReadData, Errno> {
    if fileSystem.announcements.isOwnHandle(handle) { return .failure(.badFileDescriptor) }
    // libfuse reads the working file itself (splice where it can): no copy through Swift.
    return .success(
      .file(descriptor: fileSystem.descriptor(handle: handle), offset: offset, count: size))
  }

  public func write(
    inode: UInt64, handle: UInt64, data: UnsafeRawBufferPointer, offset: Int64,
    context: RequestContext
  ) -> Result<Int, Errno> {
    if fileSystem.announcements.isOwnHandle(handle) { return .failure(.badFileDescriptor) }
    return run { () throws(Errno) in
      // The kernel refreshes only size and times after a write (fuse_write_update_attr), so a
      // cleared setuid bit would stay in its cache for `stat -c %a`, which asks for the mode
      // alone: the attributes are dropped before the write is answered.
      if context.clearsSetID, try fileSystem.clearSetID(handle: handle) {
        try? notifier.withLock { $0 }?.invalidateAttributes(inode)
      }
      return try fileSystem.write(handle: handle, data: data, offset: offset)
    }
  }

  public func flush(inode: UInt64, handle: UInt64, context: RequestContext) -> Result<Void, Errno> {
    if fileSystem.announcements.isOwnHandle(handle) { return .success(()) }
    return run { () throws(Errno) in try fileSystem.flush(handle: handle) }
  }

  public func release(inode: UInt64, handle: UInt64, flags: Int32, context: RequestContext)
    -> Result<Void, Errno>
  {
    if fileSystem.announcements.isOwnHandle(handle) {
      fileSystem.announcements.releaseHandle(handle)
      return .success(())
    }
    fileSystem.release(handle: handle)
    return .success(())
  }

  public func fsync(inode: UInt64, handle: UInt64, dataOnly: Bool, context: RequestContext)
    -> Result<Void, Errno>
  {
    if fileSystem.announcements.isOwnHandle(handle) { return .success(()) }
    return run { () throws(Errno) in
      try fileSystem.synchronize(handle: handle, dataOnly: dataOnly)
    }
  }

  public func allocate(
    inode: UInt64, handle: UInt64, mode: Int32, offset: Int64, length: Int64,
    context: RequestContext
  ) -> Result<Void, Errno> {
    run { () throws(Errno) in
      try fileSystem.allocate(handle: handle, mode: mode, offset: offset, length: length)
    }
  }

  public func openDirectory(inode: UInt64, flags: Int32, context: RequestContext) -> Result<
    OpenReply, Errno
  > {
    run { () throws(Errno) in
      // The kernel may keep a real folder's listing: it drops it itself when it changes the
      // folder, and sync's changes invalidate the folder's inode. keep_cache keeps it across
      // opendir (without it every opendir empties the cache, and each `ls` or `git status`
      // lists every folder again). `.versions` folders change with no invalidation of their
      // own, so they are listed afresh.
      let cached = !DocumentFileSystem.isVirtual(inode)
      fileSystem.announcements.noteSeen(inode, by: context.pid)
      return OpenReply(
        handle: try fileSystem.openDirectory(inode: inode, caller: caller(context)),
        keepCache: cached,
        cacheDirectory: cached)
    }
  }

  public func readDirectory(
    inode: UInt64, handle: UInt64, offset: Int64, plus: Bool, context: RequestContext,
    emit: (DirectoryEntry) -> Bool
  ) -> Result<Void, Errno> {
    run { () throws(Errno) in
      try fileSystem.readDirectory(inode: inode, handle: handle, offset: offset, plus: plus) {
        item in
        var attributes = item.attributes ?? stat()
        if item.attributes == nil {
          attributes.st_ino = UInt(item.inode)
          attributes.st_mode = item.type
        }
        let isDot = item.name == [0x2E] || item.name == [0x2E, 0x2E]
        return emit(
          DirectoryEntry(
            name: item.name, attributes: attributes, nextOffset: item.nextOffset,
            entry: plus && !isDot ? entry(attributes) : nil))
      }
    }
  }

  public func releaseDirectory(inode: UInt64, handle: UInt64, context: RequestContext) -> Result<
    Void, Errno
  > {
    fileSystem.releaseDirectory(handle: handle)
    return .success(())
  }

  public func fsyncDirectory(
    inode: UInt64, handle: UInt64, dataOnly: Bool, context: RequestContext
  ) -> Result<Void, Errno> {
    run { () throws(Errno) in try fileSystem.synchronizeDirectory(inode: inode) }
  }

  public func statfs(inode: UInt64, context: RequestContext) -> Result<statvfs, Errno> {
    run { () throws(Errno) in try fileSystem.statistics() }
  }

  public func setExtendedAttribute(
    inode: UInt64, name: [UInt8], value: UnsafeRawBufferPointer, flags: Int32,
    context: RequestContext
  ) -> Result<Void, Errno> {
    if fileSystem.isAnnouncer(context.pid) { return .failure(.notPermitted) }
    return run { () throws(Errno) in
      try fileSystem.setExtendedAttribute(
        inode: inode, name: name, value: value, flags: flags, caller: caller(context))
    }
  }

  public func getExtendedAttribute(inode: UInt64, name: [UInt8], context: RequestContext)
    -> Result<[UInt8], Errno>
  {
    run { () throws(Errno) in
      try fileSystem.extendedAttribute(inode: inode, name: name, caller: caller(context))
    }
  }

  public func listExtendedAttributes(inode: UInt64, context: RequestContext) -> Result<
    [[UInt8]], Errno
  > {
    run { () throws(Errno) in try fileSystem.extendedAttributeNames(inode: inode) }
  }

  public func removeExtendedAttribute(inode: UInt64, name: [UInt8], context: RequestContext)
    -> Result<Void, Errno>
  {
    if fileSystem.isAnnouncer(context.pid) { return .failure(.notPermitted) }
    return run { () throws(Errno) in
      try fileSystem.removeExtendedAttribute(inode: inode, name: name, caller: caller(context))
    }
  }

  public func access(inode: UInt64, mask: Int32, context: RequestContext) -> Result<Void, Errno> {
    run { () throws(Errno) in
      try fileSystem.access(inode: inode, mask: mask, caller: caller(context))
    }
  }

  public func create(
    parent: UInt64, name: [UInt8], mode: mode_t, flags: Int32, context: RequestContext
  ) -> Result<(Entry, OpenReply), Errno> {
    if fileSystem.isAnnouncer(context.pid) {
      return run { () throws(Errno) in
        let attributes = try fileSystem.announcedEntry(parent: parent, name: name)
        return (
          entry(attributes),
          OpenReply(handle: fileSystem.announcedHandle(), directIO: true, keepCache: true)
        )
      }
    }
    return run { () throws(Errno) in
      let (attributes, file) = try fileSystem.create(
        parent: parent, name: name, mode: mode, flags: flags, caller: caller(context))
      return (
        entry(attributes),
        OpenReply(
          handle: file.handle, directIO: Self.writesDirectly(flags), keepCache: true,
          backingFile: file.descriptor, passesThroughOnlyWhenShared: file.writesMayClearSetID)
      )
    }
  }

  /// The answer to a mknod, mkdir or symlink of the raising process; nil for anyone else's.
  private func announcedEntry(parent: UInt64, name: [UInt8], context: RequestContext)
    -> Result<Entry, Errno>?
  {
    guard fileSystem.isAnnouncer(context.pid) else { return nil }
    return run { () throws(Errno) in
      entry(try fileSystem.announcedEntry(parent: parent, name: name))
    }
  }

  public func destroy() {
    fileSystem.shutdown()
  }
}
