import CFuse
import CFuseIO
import Glibc
import SystemPackage

/// What libfuse's callbacks reach through `fuse_req_userdata`: the file system and the options
/// that the init callback reads. Immutable, so it is shared freely between worker threads.
final class SessionBox: Sendable {
  let fileSystem: any LowLevelFileSystem
  let options: SessionOptions
  let backingFiles = BackingFiles()

  init(fileSystem: any LowLevelFileSystem, options: SessionOptions) {
    self.fileSystem = fileSystem
    self.options = options
  }

  /// The session keeps the box alive for as long as libfuse may call back, so callbacks borrow it.
  static func from(_ pointer: UnsafeMutableRawPointer?) -> SessionBox {
    Unmanaged<SessionBox>.fromOpaque(pointer!).takeUnretainedValue()
  }
}

/// The 1 MiB libfuse 3.14 can receive (FUSE_MAX_MAX_PAGES 256 pages of 4 KiB in its buffer);
/// the kernel accepts it when it offers FUSE_MAX_PAGES (Linux 4.20 and later).
let preferredMaxWrite: UInt32 = 1 << 20

/// The capabilities to ask for, given what the kernel offers and what libfuse already wants.
func wantedCapabilities(capable: UInt32, want: UInt32, writebackCache: Bool) -> UInt32 {
  var want = want
  func ask(_ capability: Int32) {
    if capable & UInt32(capability) != 0 { want |= UInt32(capability) }
  }
  func refuse(_ capability: Int32) { want &= ~UInt32(capability) }
  ask(FUSE_CAP_ASYNC_READ)
  // Reads answered with a file range go to the kernel by splice instead of a copy.
  ask(FUSE_CAP_SPLICE_WRITE)
  ask(FUSE_CAP_SPLICE_MOVE)
  ask(FUSE_CAP_READDIRPLUS)
  ask(FUSE_CAP_READDIRPLUS_AUTO)
  // Concurrent lookups and readdirs in one directory, where offered: the protocol already
  // promises concurrency. (libfuse 3.14's --debug INIT line shows flags 0x4040f021 with or
  // without it on Linux 6.18, so whether it reaches the kernel here is not confirmed.)
  ask(FUSE_CAP_PARALLEL_DIROPS)
  // The kernel keeps a symlink's target in its page cache instead of asking READLINK on every
  // resolution. A target never changes under an inode: sync replaces a changed symlink with
  // a new node (DocumentFileSystem+Sync), and rename keeps the target.
  ask(FUSE_CAP_CACHE_SYMLINKS)
  if writebackCache { ask(FUSE_CAP_WRITEBACK_CACHE) } else { refuse(FUSE_CAP_WRITEBACK_CACHE) }
  // libfuse asks for atomic O_TRUNC by default, which would make open() responsible for
  // truncating; without it the kernel strips O_TRUNC and sends setattr(size: 0) instead
  // (fuse_send_open), so truncation has one path through the file system.
  refuse(FUSE_CAP_ATOMIC_O_TRUNC)
  // With HANDLE_KILLPRIV the file system must clear setuid/setgid on write and chown itself;
  // without it the kernel sends that as an ordinary setattr of the mode.
  refuse(FUSE_CAP_HANDLE_KILLPRIV)
  // libfuse asks for AUTO_INVAL_DATA by default: the kernel then drops a file's cached pages
  // whenever a GETATTR shows an mtime other than its own, and after every write it does (it
  // stamps mtime with its clock, the working file with the daemon's write), so the first read
  // of a file just written read it all again (128 READs for 16 MiB). Every change of content
  // comes through the mount or is invalidated by sync (KernelNotifier), which makes it moot.
  refuse(FUSE_CAP_AUTO_INVAL_DATA)
  // No getlk/setlk/flock are registered, so the kernel keeps locks locally.
  refuse(FUSE_CAP_POSIX_LOCKS)
  refuse(FUSE_CAP_FLOCK_LOCKS)
  return want
}

private func bytes(_ cString: UnsafePointer<CChar>?) -> [UInt8] {
  guard let cString else { return [] }
  return Array(UnsafeRawBufferPointer(start: cString, count: strlen(cString)))
}

private func handle(_ info: UnsafeMutablePointer<fuse_file_info>?) -> UInt64 {
  info?.pointee.fh ?? 0
}

/// The operations table. Built in a nonisolated context: a closure written in main.swift's top
/// level would be main-actor isolated and trap when libfuse's worker threads call it.
nonisolated func makeOperations() -> fuse_lowlevel_ops {
  var ops = fuse_lowlevel_ops()

  ops.`init` = { userdata, connection in
    guard let connection else { return }
    let box = SessionBox.from(userdata)
    connection.pointee.want = wantedCapabilities(
      capable: connection.pointee.capable, want: connection.pointee.want,
      writebackCache: box.options.writebackCache)
    connection.pointee.max_write = min(connection.pointee.max_write, preferredMaxWrite)
  }
  ops.destroy = { userdata in
    SessionBox.from(userdata).fileSystem.destroy()
  }

  ops.lookup = { req, parent, name in
    let request = Request(req!)
    let result = request.fileSystem.lookup(
      parent: parent, name: bytes(name), context: request.context)
    request.reply(result)
  }
  ops.forget = { req, inode, count in
    let request = Request(req!)
    request.fileSystem.forget(inode: inode, count: count)
    request.replyNone()
  }
  ops.forget_multi = { req, count, forgets in
    let request = Request(req!)
    let fileSystem = request.fileSystem
    for index in 0..<count {
      let forget = forgets![index]
      fileSystem.forget(inode: forget.ino, count: forget.nlookup)
    }
    request.replyNone()
  }
  ops.getattr = { req, inode, info in
    let request = Request(req!)
    let result = request.fileSystem.getAttributes(
      inode: inode, handle: info.map { $0.pointee.fh }, context: request.context)
    request.reply(result)
  }
  ops.setattr = { req, inode, attributes, valid, info in
    let request = Request(req!)
    let changes = attributeChanges(
      valid: valid, attributes: attributes?.pointee ?? stat(), handle: info.map { $0.pointee.fh })
    let result = request.fileSystem.setAttributes(
      inode: inode, changes: changes, context: request.context)
    request.reply(result)
  }
  ops.readlink = { req, inode in
    let request = Request(req!)
    let result = request.fileSystem.readLink(inode: inode, context: request.context)
    request.reply(link: result)
  }
  ops.mknod = { req, parent, name, mode, device in
    let request = Request(req!)
    let result = request.fileSystem.makeNode(
      parent: parent, name: bytes(name), mode: mode, device: device, context: request.context)
    request.reply(result)
  }
  ops.mkdir = { req, parent, name, mode in
    let request = Request(req!)
    let result = request.fileSystem.makeDirectory(
      parent: parent, name: bytes(name), mode: mode, context: request.context)
    request.reply(result)
  }
  ops.unlink = { req, parent, name in
    let request = Request(req!)
    let result = request.fileSystem.unlink(
      parent: parent, name: bytes(name), context: request.context)
    request.reply(result)
  }
  ops.rmdir = { req, parent, name in
    let request = Request(req!)
    let result = request.fileSystem.removeDirectory(
      parent: parent, name: bytes(name), context: request.context)
    request.reply(result)
  }
  ops.symlink = { req, target, parent, name in
    let request = Request(req!)
    let result = request.fileSystem.symlink(
      target: bytes(target), parent: parent, name: bytes(name), context: request.context)
    request.reply(result)
  }
  ops.rename = { req, parent, name, newParent, newName, flags in
    let request = Request(req!)
    let result = request.fileSystem.rename(
      parent: parent, name: bytes(name), newParent: newParent, newName: bytes(newName),
      flags: RenameFlags(rawValue: flags), context: request.context)
    request.reply(result)
  }
  ops.link = { req, inode, newParent, newName in
    let request = Request(req!)
    let result = request.fileSystem.link(
      inode: inode, newParent: newParent, newName: bytes(newName), context: request.context)
    request.reply(result)
  }
  ops.open = { req, inode, info in
    let request = Request(req!)
    let result = request.fileSystem.open(
      inode: inode, flags: info!.pointee.flags, context: request.context)
    request.reply(result, inode: inode, info: info!)
  }
  ops.read = { req, inode, size, offset, info in
    let request = Request(req!)
    let result = request.fileSystem.read(
      inode: inode, handle: handle(info), offset: Int64(offset), size: size,
      context: request.context)
    request.reply(result)
  }
  ops.write = { req, inode, data, size, offset, info in
    let request = Request(req!)
    var context = request.context
    context.clearsSetID = cfuse_io_write_kills_suidgid() != 0
    let result = request.fileSystem.write(
      inode: inode, handle: handle(info), data: UnsafeRawBufferPointer(start: data, count: size),
      offset: Int64(offset), context: context)
    request.reply(written: result)
  }
  ops.flush = { req, inode, info in
    let request = Request(req!)
    let result = request.fileSystem.flush(
      inode: inode, handle: handle(info), context: request.context)
    request.reply(result)
  }
  ops.release = { req, inode, info in
    let request = Request(req!)
    request.box.backingFiles.release(inode: inode, handle: handle(info))
    let result = request.fileSystem.release(
      inode: inode, handle: handle(info), flags: info?.pointee.flags ?? 0,
      context: request.context)
    request.reply(result)
  }
  ops.fsync = { req, inode, dataOnly, info in
    let request = Request(req!)
    let result = request.fileSystem.fsync(
      inode: inode, handle: handle(info), dataOnly: dataOnly != 0, context: request.context)
    request.reply(result)
  }
  ops.fallocate = { req, inode, mode, offset, length, info in
    let request = Request(req!)
    let result = request.fileSystem.allocate(
      inode: inode, handle: handle(info), mode: mode, offset: Int64(offset),
      length: Int64(length), context: request.context)
    request.reply(result)
  }
  ops.opendir = { req, inode, info in
    let request = Request(req!)
    let result = request.fileSystem.openDirectory(
      inode: inode, flags: info!.pointee.flags, context: request.context)
    request.reply(result, inode: inode, info: info!)
  }
  ops.readdir = { req, inode, size, offset, info in
    readDirectory(req!, inode: inode, size: size, offset: offset, info: info, plus: false)
  }
  ops.readdirplus = { req, inode, size, offset, info in
    readDirectory(req!, inode: inode, size: size, offset: offset, info: info, plus: true)
  }
  ops.releasedir = { req, inode, info in
    let request = Request(req!)
    let result = request.fileSystem.releaseDirectory(
      inode: inode, handle: handle(info), context: request.context)
    request.reply(result)
  }
  ops.fsyncdir = { req, inode, dataOnly, info in
    let request = Request(req!)
    let result = request.fileSystem.fsyncDirectory(
      inode: inode, handle: handle(info), dataOnly: dataOnly != 0, context: request.context)
    request.reply(result)
  }
  ops.statfs = { req, inode in
    let request = Request(req!)
    let result = request.fileSystem.statfs(inode: inode, context: request.context)
    request.reply(result)
  }
  ops.setxattr = { req, inode, name, value, size, flags in
    let request = Request(req!)
    let result = request.fileSystem.setExtendedAttribute(
      inode: inode, name: bytes(name), value: UnsafeRawBufferPointer(start: value, count: size),
      flags: flags, context: request.context)
    request.reply(result)
  }
  ops.getxattr = { req, inode, name, size in
    let request = Request(req!)
    let result = request.fileSystem.getExtendedAttribute(
      inode: inode, name: bytes(name), context: request.context)
    switch result {
    case .success(let value):
      request.reply(extendedAttributeReply(value: value, requestedSize: size))
    case .failure(let error):
      request.reply(error: error)
    }
  }
  ops.listxattr = { req, inode, size in
    let request = Request(req!)
    let result = request.fileSystem.listExtendedAttributes(inode: inode, context: request.context)
    switch result {
    case .success(let names):
      request.reply(
        extendedAttributeReply(value: joinedAttributeNames(names), requestedSize: size))
    case .failure(let error):
      request.reply(error: error)
    }
  }
  ops.removexattr = { req, inode, name in
    let request = Request(req!)
    let result = request.fileSystem.removeExtendedAttribute(
      inode: inode, name: bytes(name), context: request.context)
    request.reply(result)
  }
  ops.access = { req, inode, mask in
    let request = Request(req!)
    let result = request.fileSystem.access(inode: inode, mask: mask, context: request.context)
    request.reply(result)
  }
  ops.create = { req, parent, name, mode, info in
    let request = Request(req!)
    let result = request.fileSystem.create(
      parent: parent, name: bytes(name), mode: mode, flags: info!.pointee.flags,
      context: request.context)
    request.reply(created: result, info: info!)
  }
  return ops
}

/// readdir and readdirplus: fill at most `size` bytes while the file system emits entries.
private func readDirectory(
  _ raw: fuse_req_t, inode: fuse_ino_t, size: Int, offset: off_t,
  info: UnsafeMutablePointer<fuse_file_info>?, plus: Bool
) {
  let request = Request(raw)
  var buffer = DirectoryBuffer(capacity: size, plus: plus)
  let result = request.fileSystem.readDirectory(
    inode: inode, handle: handle(info), offset: Int64(offset), plus: plus, context: request.context
  ) { entry in
    buffer.append(entry, request: raw)
  }
  // Entries already packed for readdirplus count as lookups in the file system, so they must
  // reach the kernel even when a later entry failed; the error then surfaces on the next call.
  if case .failure(let error) = result, buffer.used == 0 {
    request.reply(error: error)
    return
  }
  request.reply(bytes: buffer.bytes, count: buffer.used)
}
