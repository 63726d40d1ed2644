import Glibc
import SystemPackage

extension ContentStore {
  // MARK: - The working files behind the mount
  //
  // The file system names files and keeps their inodes; the content of each regular file is
  // its working file, and every create, open for writing, write, truncate, time change, fsync
  // and removal of one happens here. An open file's handle is the descriptor these return.

  /// The flags of an open that carry over to the working file. The working file is always
  /// opened for reading and writing: the kernel reads pages of files opened write-only
  /// (partial page writes, mmap), and the open's permissions are checked before.
  static func fileSystemFlags(_ flags: Int32) -> Int32 {
    O_RDWR | O_CLOEXEC | (flags & (O_APPEND | O_TRUNC | O_SYNC | O_DSYNC))
  }

  /// Creates the working file of a new inode and opens it with the open's `flags`: one made
  /// ahead of time when it is ready (``LocalStore/prepareWorkingFiles(from:)``), which spares
  /// the create the disk's inode allocation.
  public func createWorkingFile(_ inode: UInt64, flags: Int32) throws(Errno) -> Int32 {
    // O_SYNC and O_DSYNC cannot be added to an open descriptor (F_SETFL ignores them).
    if flags & O_SYNC == 0, let fd = pool.take(inode) {
      // Made a moment ago: its times become the create's, as the kernel stamps a new file.
      if (flags & O_APPEND == 0 || fcntl(fd, F_SETFL, O_APPEND) == 0) && futimens(fd, nil) == 0 {
        return fd
      }
      close(fd)
    }
    let fd = openat(
      workingFiles, LocalStore.workingFileName(inode),
      Self.fileSystemFlags(flags) | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { throw Errno(rawValue: errno) }
    return fd
  }

  /// Opens the working file of `inode` for a program's open with `flags`.
  public func openWorkingFile(_ inode: UInt64, flags: Int32) throws(Errno) -> Int32 {
    let fd = openat(workingFiles, LocalStore.workingFileName(inode), Self.fileSystemFlags(flags))
    guard fd >= 0 else { throw Errno(rawValue: errno) }
    return fd
  }

  /// Opens the working file of `inode` as it is named now, for an open handle whose file sync
  /// replaced (``reopenWorkingFile(_:)`` then takes the handle's number with dup2).
  public func reopenWorkingFile(_ inode: UInt64) -> Int32? {
    let fd = openat(workingFiles, LocalStore.workingFileName(inode), O_RDWR | O_CLOEXEC)
    return fd >= 0 ? fd : nil
  }

  /// Removes the working file of an inode that never got its name (a create that failed):
  /// nothing was committed about it, so it goes at once.
  public func discardNewWorkingFile(_ inode: UInt64) {
    _ = unlinkat(workingFiles, LocalStore.workingFileName(inode), 0)
  }

  /// The working file's status (size, times) as it is now; nil when it is gone.
  public func workingFileStatus(_ inode: UInt64) -> stat? {
    var info = stat()
    return fstatat(workingFiles, LocalStore.workingFileName(inode), &info, 0) == 0 ? info : nil
  }

  /// The status of a working file on its way in (``createIncomingFile()``).
  public func incomingStatus(_ name: String) -> stat? {
    var info = stat()
    return fstatat(workingFiles, name, &info, 0) == 0 ? info : nil
  }

  /// Changes the working file's change time, since a rename, link or chmod is a change of the
  /// inode that the kernel cannot see on the working file itself.
  public func touchChangeTime(of inode: UInt64) {
    _ = fchmodat(workingFiles, LocalStore.workingFileName(inode), 0o600, 0)
  }

  /// Truncates the working file of `inode` (not open here) to `size`.
  public func truncateWorkingFile(_ inode: UInt64, to size: Int64) throws(Errno) {
    let fd = openat(workingFiles, LocalStore.workingFileName(inode), O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { throw .ioError }
    defer { close(fd) }
    try truncate(descriptor: fd, to: size)
  }

  /// Truncates an open working file to `size`.
  public func truncate(descriptor: Int32, to size: Int64) throws(Errno) {
    guard ftruncate(descriptor, off_t(size)) == 0 else { throw Errno(rawValue: errno) }
  }

  /// Sets the working file's access and modification times (`timespec`s as utimensat takes
  /// them: UTIME_OMIT and UTIME_NOW included).
  public func setTimes(of inode: UInt64, _ times: [timespec]) throws(Errno) {
    guard utimensat(workingFiles, LocalStore.workingFileName(inode), times, 0) == 0 else {
      throw Errno(rawValue: errno)
    }
  }

  /// Writes a program's bytes into an open working file at `offset`; how many were written
  /// (fewer only when a later part failed). A write that completes a window starts the disk
  /// on it (``Writeback``).
  public func write(_ data: UnsafeRawBufferPointer, to descriptor: Int32, at offset: Int64)
    throws(Errno) -> Int
  {
    let done = Self.writeAll(data, to: descriptor, at: offset)
    if done == 0 && !data.isEmpty { throw Errno(rawValue: errno) }
    if let window = Writeback.completedWindow(offset: offset, count: done) {
      Writeback.start(descriptor, window)
    }
    return done
  }

  /// fallocate(2) on an open working file with the program's `mode`; what the disk under the
  /// state folder cannot do it refuses (EOPNOTSUPP).
  public func allocate(descriptor: Int32, mode: Int32, offset: Int64, length: Int64)
    throws(Errno)
  {
    guard LinuxCalls.fallocate(descriptor, mode, offset, length) == 0 else {
      throw Errno(rawValue: errno)
    }
  }

  /// Makes an open working file's content (and with `dataOnly` false, its metadata) durable;
  /// the errno of a failure, 0 on success.
  public func flush(descriptor: Int32, dataOnly: Bool) -> Int32 {
    (dataOnly ? fdatasync(descriptor) : fsync(descriptor)) == 0 ? 0 : errno
  }

  /// Gives a working file on its way in (``createIncomingFile()``) the name of an inode's
  /// working file, replacing what had it.
  public func installIncoming(_ name: String, as inode: UInt64) throws(Errno) {
    guard renameat(workingFiles, name, workingFiles, LocalStore.workingFileName(inode)) == 0
    else { throw Errno(rawValue: errno) }
  }

  /// Removes the working files of inodes that `keeps` does not want (those of no regular
  /// file: a crash left them between a commit and their removal).
  public func removeStrayWorkingFiles(keeping keeps: (UInt64) -> Bool) {
    for shard in 0..<256 {
      let shardName = String(LocalStore.workingFileName(UInt64(shard)).prefix(2))
      let fd = openat(workingFiles, shardName, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
      guard fd >= 0, let dir = fdopendir(fd) else { continue }
      defer { closedir(dir) }
      while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
          String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
        }
        guard let inode = UInt64(name) else { continue }
        if !keeps(inode) { _ = unlinkat(fd, name, 0) }
      }
    }
  }

  /// An unnamed file in the state folder that holds `bytes`, read as a working file is, and
  /// gone at close: the caller owns the descriptor. (memfd_create would keep it off the disk,
  /// but Swift does not see it without _GNU_SOURCE; the state folder is private, as the
  /// content is.)
  public func unnamedFile(holding bytes: [UInt8]) throws(Errno) -> Int32 {
    var template = Array("\(directory)/view-XXXXXX".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { throw Errno(rawValue: errno) }
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    guard bytes.withUnsafeBytes({ Self.writeAll($0, to: fd, at: 0) }) == bytes.count else {
      let error = Errno(rawValue: errno)
      close(fd)
      throw error
    }
    return fd
  }

  /// Writes `bytes` into `descriptor` from `offset` on; how many were written, fewer only when
  /// a write failed (its `errno` is left as it set it, EIO when it wrote nothing).
  static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, at offset: Int64)
    -> Int
  {
    var done = 0
    while done < bytes.count {
      let n = pwrite(
        descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else {
        if n == 0 { errno = EIO }
        break
      }
      done += n
    }
    return done
  }

  /// Whether the new working file `incoming` begins with the whole content of the working
  /// file of `inode`: a version that only appends to it.
  public func incomingFile(_ incoming: String, startsWith inode: UInt64) -> Bool {
    let new = openat(workingFiles, incoming, O_RDONLY | O_CLOEXEC)
    let old = openat(workingFiles, LocalStore.workingFileName(inode), O_RDONLY | O_CLOEXEC)
    defer {
      if new >= 0 { close(new) }
      if old >= 0 { close(old) }
    }
    var newInfo = stat()
    var oldInfo = stat()
    guard new >= 0, old >= 0, fstat(new, &newInfo) == 0, fstat(old, &oldInfo) == 0,
      newInfo.st_size > oldInfo.st_size
    else { return false }
    let chunk = 1 << 16
    var left = Int(oldInfo.st_size)
    var offset: off_t = 0
    var a = [UInt8](repeating: 0, count: chunk)
    var b = [UInt8](repeating: 0, count: chunk)
    while left > 0 {
      let count = min(chunk, left)
      guard pread(new, &a, count, offset) == count, pread(old, &b, count, offset) == count,
        a.prefix(count) == b.prefix(count)
      else { return false }
      left -= count
      offset += off_t(count)
    }
    return true
  }
}
