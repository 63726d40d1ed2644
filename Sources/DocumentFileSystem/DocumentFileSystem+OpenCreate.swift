import Glibc
import LocalStore
import SystemPackage

/// An open file: its handle and the working file's descriptor that reads and writes use.
public struct OpenFile: Sendable {
  public var handle: UInt64
  public var descriptor: Int32
  /// Opened for writing while setuid, or setgid with group execute, was set: a write by a
  /// caller without CAP_FSETID must clear them, so the writes must reach the file system
  /// (``DocumentFileSystem/clearSetID(handle:)``) rather than go to the working file unseen.
  public var writesMayClearSetID = false
  /// The open stamped the file's atime (relatime), so a kernel's cached attributes are stale.
  public var stampedAccessTime = false
}

extension DocumentFileSystem {

  /// create: a new regular file, opened.
  public func create(parent: UInt64, name: [UInt8], mode: UInt32, flags: Int32, caller: Caller)
    throws(Errno) -> (stat, OpenFile)
  {
    try lock.withLock { () throws(Errno) -> (stat, OpenFile) in
      let folder = try prepareNewName(parent: parent, name: name, caller: caller)
      let record = newRecord(in: folder, mode: UInt32(S_IFREG) | (mode & 0o7777), caller: caller)
      let fd = try store.content.createWorkingFile(record.inode, flags: flags)
      let node: Node
      do throws(Errno) {
        try admit(fd)
      } catch {
        store.content.discardNewWorkingFile(record.inode)
        throw error
      }
      do throws(Errno) {
        node = try insert(record, name: name, in: folder)
      } catch {
        close(fd)
        store.content.discardNewWorkingFile(record.inode)
        throw error
      }
      node.openCount += 1
      node.writers += 1
      openFiles[UInt64(fd)] = (node.inode, true)
      store.writerOpened()
      let setID = Self.clearingSetID(node.mode) != node.mode
      return (
        try attributes(node, descriptor: fd),
        OpenFile(handle: UInt64(fd), descriptor: fd, writesMayClearSetID: setID)
      )
    }
  }

  /// open.
  public func open(inode: UInt64, flags: Int32, caller: Caller) throws(Errno) -> OpenFile {
    if Self.isVirtual(inode) {
      try requireVirtual(Self.accessWanted(openFlags: flags) & AccessCheck.read, inode, caller)
      return try virtualOpen(inode, flags: flags)
    }
    var file = try lock.withLock { () throws(Errno) -> OpenFile in
      let node = try node(inode)
      if node.isDirectory { throw .isDirectory }
      guard node.isRegular else {
        throw node.isSymlink ? .tooManySymbolicLinkLevels : .notSupported
      }
      try require(Self.accessWanted(openFlags: flags), node, caller)
      let fd = try store.content.openWorkingFile(inode, flags: flags)
      try admit(fd)
      let writable = flags & O_ACCMODE != O_RDONLY
      node.openCount += 1
      if writable {
        node.writers += 1
        store.writerOpened()
      }
      openFiles[UInt64(fd)] = (inode, writable)
      return OpenFile(
        handle: UInt64(fd), descriptor: fd,
        writesMayClearSetID: writable && Self.clearingSetID(node.mode) != node.mode)
    }
    if flags & O_ACCMODE != O_WRONLY {
      file.stampedAccessTime = Self.stampAccessTime(file.descriptor)
    }
    return file
  }

  /// Whether relatime (the kernel's `relatime_need_update`) moves an atime at a read: when it
  /// is not later than the mtime or the ctime, or a day old.
  public static func accessTimeDue(access: Int64, modification: Int64, change: Int64, now: Int64)
    -> Bool
  {
    access <= modification || access <= change
      || now.subtractingReportingOverflow(access)
        .partialValue >= 86_400_000_000_000
  }

  /// Lets the working file's disk stamp its atime for an open that reads, where relatime says
  /// a read moves it; returns whether it moved. At the open, because the kernel serves the
  /// reads of a cached file from its page cache (keep_cache) without asking docsync, and a
  /// FUSE inode's atime is never the kernel's to change (S_NOATIME). Reading one byte moves
  /// the atime as a program's read would, without the ctime that utimensat would change.
  /// Outside the tree lock: the byte may have to come from the disk.
  static func stampAccessTime(_ fd: Int32) -> Bool {
    var before = stat()
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    guard fstat(fd, &before) == 0,
      accessTimeDue(
        access: nanoseconds(before.st_atim), modification: nanoseconds(before.st_mtim),
        change: nanoseconds(before.st_ctim), now: nanoseconds(now))
    else { return false }
    var byte: UInt8 = 0
    _ = pread(fd, &byte, 1, 0)
    var after = stat()
    guard fstat(fd, &after) == 0 else { return false }
    return after.st_atim.tv_sec != before.st_atim.tv_sec
      || after.st_atim.tv_nsec != before.st_atim.tv_nsec
  }

  /// fallocate on an open file, carried out on its working file: space reserved with mode 0 or
  /// KEEP_SIZE (databases, torrent clients, VM images, `fallocate(1)`), and PUNCH_HOLE or
  /// ZERO_RANGE, which change the content as a write of zeros does. What the disk under the
  /// state folder cannot do it refuses (EOPNOTSUPP). Outside the tree lock, as a write.
  public func allocate(handle: UInt64, mode: Int32, offset: Int64, length: Int64) throws(Errno) {
    guard let (_, writable) = lock.withLock({ openFiles[handle] }), writable else {
      throw .badFileDescriptor
    }
    engine?.changeLog.touch()
    try store.content.allocate(
      descriptor: descriptor(handle: handle), mode: mode, offset: offset, length: length)
  }

  /// The working file's descriptor behind an open handle, for zero-copy reads.
  public func descriptor(handle: UInt64) -> Int32 { Int32(truncatingIfNeeded: handle) }

  /// read, into memory.
  public func read(handle: UInt64, offset: Int64, count: Int) throws(Errno) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: count)
    var done = 0
    while done < count {
      let n = buffer.withUnsafeMutableBytes { raw in
        pread(
          descriptor(handle: handle), raw.baseAddress! + done, count - done,
          off_t(offset) + off_t(done))
      }
      if n < 0 {
        if errno == EINTR { continue }
        throw Errno(rawValue: errno)
      }
      if n == 0 { break }
      done += n
    }
    buffer.removeLast(count - done)
    return buffer
  }

  /// write.
  public func write(handle: UInt64, data: UnsafeRawBufferPointer, offset: Int64) throws(Errno)
    -> Int
  {
    engine?.changeLog.touch()
    return try store.content.write(data, to: descriptor(handle: handle), at: offset)
  }

  /// What a mode becomes when a write, truncate or chown clears its set-ID bits, as Linux's
  /// setattr_should_drop_suidgid decides: setuid always, setgid only where the group may
  /// execute (without it, setgid marks mandatory locking, which a write keeps).
  public static func clearingSetID(_ mode: UInt32) -> UInt32 {
    var mode = mode & ~UInt32(S_ISUID)
    if mode & UInt32(S_IXGRP) != 0 { mode &= ~UInt32(S_ISGID) }
    return mode
  }

  /// Clears the set-ID bits of an open file before a write by a caller without CAP_FSETID, as
  /// a local disk does (under FUSE_HANDLE_KILLPRIV_V2 the kernel leaves it to the file system).
  /// Almost every file has none, and then nothing is stored. Returns whether the mode changed.
  public func clearSetID(handle: UInt64) throws(Errno) -> Bool {
    // Every write of an ordinary user asks this: without a set-ID file, it takes no lock.
    guard Node.setIDSeen.load(ordering: .sequentiallyConsistent) else { return false }
    return try lock.withLock { () throws(Errno) -> Bool in
      guard let (inode, _) = openFiles[handle], let node = nodes[inode] else { return false }
      let cleared = Self.clearingSetID(node.mode)
      guard cleared != node.mode else { return false }
      node.mode = cleared
      touchChangeTime(node)
      try persist([.putInode(node.record)])
      return true
    }
  }

  /// flush: called at every close of a file descriptor, before close(2) returns; nothing is
  /// buffered here. The kernel sends RELEASE later and asynchronously (under load, seconds
  /// later), so the write is noted now and a flushed writer stops holding back its file's
  /// version: a `docsync sync` right after the close must see the file as closed and changed.
  public func flush(handle: UInt64) throws(Errno) {
    lock.withLock {
      guard let (inode, writable) = openFiles[handle], writable, let node = nodes[inode] else {
        return
      }
      if flushedHandles.insert(handle).inserted {
        node.closedWriters += 1
        store.writerClosed()
      }
      noteWrite(node)
    }
  }

  /// release: the last close of an open file.
  public func release(handle: UInt64) {
    lock.withLock {
      guard let (inode, writable) = openFiles.removeValue(forKey: handle) else { return }
      close(descriptor(handle: handle))
      let wasFlushed = flushedHandles.remove(handle) != nil
      if writable && !wasFlushed { store.writerClosed() }
      if let node = nodes[inode] {
        node.openCount -= 1
        if wasFlushed { node.closedWriters -= 1 }
        if writable {
          node.writers -= 1
          noteWrite(node)
        }
        reapIfUnused(node)
      }
    }
  }

  /// fsync and fdatasync: the content, and the entry that names the file, become durable.
  /// The tree's queued changes are committed first, then the working file and the journal are
  /// flushed side by side (one disk flush's wait, not two), without the tree's lock.
  public func synchronize(handle: UInt64, dataOnly: Bool) throws(Errno) {
    let fd = descriptor(handle: handle)
    let failure: Int32
    do {
      failure = try store.syncJournal(file: fd) { () -> Int32 in
        store.content.flush(descriptor: fd, dataOnly: dataOnly)
      }
    } catch {
      throw Self.refusal(for: error)
    }
    if failure != 0 { throw Errno(rawValue: failure) }
  }
}
