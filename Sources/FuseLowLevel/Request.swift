import CFuse
import CFuseIO
import Glibc
import SystemPackage

/// One kernel request, answered exactly once: every reply consumes it, and one that is dropped
/// without a reply answers EIO, so a forgotten path never hangs the caller.
///
/// The results of fuse_reply_* are ignored: they fail only when the kernel no longer waits for
/// the answer (the caller was interrupted), and then there is nobody left to tell.
struct Request: ~Copyable {
  let raw: fuse_req_t

  init(_ raw: fuse_req_t) {
    self.raw = raw
  }

  deinit {
    fuse_reply_err(raw, EIO)
  }

  var context: RequestContext {
    let context = fuse_req_ctx(raw)!.pointee
    return RequestContext(
      uid: context.uid, gid: context.gid, pid: context.pid, umask: context.umask)
  }

  var box: SessionBox { SessionBox.from(fuse_req_userdata(raw)) }

  var fileSystem: any LowLevelFileSystem { box.fileSystem }

  consuming func reply(error: Errno) {
    fuse_reply_err(raw, error.rawValue)
    discard self
  }

  /// The answer to forget and forget_multi, which the kernel does not wait for.
  consuming func replyNone() {
    fuse_reply_none(raw)
    discard self
  }

  consuming func reply(_ result: Result<Void, Errno>) {
    switch result {
    case .success: fuse_reply_err(raw, 0)
    case .failure(let error): fuse_reply_err(raw, error.rawValue)
    }
    discard self
  }

  consuming func reply(_ result: Result<Entry, Errno>) {
    switch result {
    case .success(let entry):
      var parameter = entryParameter(entry)
      fuse_reply_entry(raw, &parameter)
    case .failure(let error):
      fuse_reply_err(raw, error.rawValue)
    }
    discard self
  }

  consuming func reply(_ result: Result<AttributeReply, Errno>) {
    switch result {
    case .success(let reply):
      var attributes = reply.attributes
      fuse_reply_attr(raw, &attributes, reply.timeout)
    case .failure(let error):
      fuse_reply_err(raw, error.rawValue)
    }
    discard self
  }

  consuming func reply(link result: Result<[UInt8], Errno>) {
    switch result {
    case .success(var target):
      target.append(0)
      target.withUnsafeBufferPointer { bytes in
        _ = fuse_reply_readlink(
          raw, UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self))
      }
    case .failure(let error):
      fuse_reply_err(raw, error.rawValue)
    }
    discard self
  }

  /// open's and opendir's answer, passed through to the reply's backing file when it names one
  /// and the session can.
  consuming func reply(
    _ result: Result<OpenReply, Errno>, inode: UInt64, info: UnsafeMutablePointer<fuse_file_info>
  ) {
    switch result {
    case .success(var open):
      let backing = backingID(&open, inode: inode)
      setOpenFlags(open, info)
      if cfuse_io_reply_open(raw, info, backing ?? 0) != 0, backing != nil {
        box.backingFiles.release(inode: inode, handle: open.handle)
      }
    case .failure(let error):
      fuse_reply_err(raw, error.rawValue)
    }
    discard self
  }

  consuming func reply(
    created result: Result<(Entry, OpenReply), Errno>, info: UnsafeMutablePointer<fuse_file_info>
  ) {
    switch result {
    case .success(let (entry, reply)):
      var open = reply
      let backing = backingID(&open, inode: UInt64(entry.attributes.st_ino))
      setOpenFlags(open, info)
      var parameter = entryParameter(entry)
      // A reply the kernel did not take (the caller was interrupted) gets no release.
      if cfuse_io_reply_create(raw, &parameter, info, backing ?? 0) != 0, backing != nil {
        box.backingFiles.release(
          inode: UInt64(entry.attributes.st_ino), handle: open.handle)
      }
    case .failure(let error):
      fuse_reply_err(raw, error.rawValue)
    }
    discard self
  }

  /// The backing id `open` passes through to, or nil; an open that passes through only when
  /// shared and is not becomes direct I/O, which the kernel allows beside passthrough opens
  /// of the inode (fuse_file_io_open) where a cached open would fail them with ETXTBSY.
  private func backingID(_ open: inout OpenReply, inode: UInt64) -> Int32? {
    guard let descriptor = open.backingFile else { return nil }
    if open.passesThroughOnlyWhenShared {
      guard cfuse_io_passthrough_active() != 0 else { return nil }
      let shared = box.backingFiles.acquireShared(inode: inode, handle: open.handle)
      if shared == nil { open.directIO = true }
      return shared
    }
    return box.backingFiles.acquire(inode: inode, handle: open.handle, descriptor: descriptor)
  }

  consuming func reply(_ result: Result<ReadData, Errno>) {
    switch result {
    case .success(.bytes(let bytes)):
      bytes.withUnsafeBufferPointer { buffer in
        _ = fuse_reply_buf(
          raw, UnsafeRawPointer(buffer.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) },
          buffer.count)
      }
    case .success(.file(let descriptor, let offset, let count)):
      cfuse_reply_file_range(raw, descriptor, off_t(offset), count)
    case .failure(let error):
      fuse_reply_err(raw, error.rawValue)
    }
    discard self
  }

  consuming func reply(written result: Result<Int, Errno>) {
    switch result {
    case .success(let count): fuse_reply_write(raw, count)
    case .failure(let error): fuse_reply_err(raw, error.rawValue)
    }
    discard self
  }

  /// The first `count` of `bytes`.
  consuming func reply(bytes: [UInt8], count: Int) {
    bytes.withUnsafeBufferPointer { buffer in
      _ = fuse_reply_buf(
        raw, UnsafeRawPointer(buffer.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) },
        count)
    }
    discard self
  }

  consuming func reply(_ result: Result<statvfs, Errno>) {
    switch result {
    case .success(var statistics): fuse_reply_statfs(raw, &statistics)
    case .failure(let error): fuse_reply_err(raw, error.rawValue)
    }
    discard self
  }

  consuming func reply(_ reply: ExtendedAttributeReply) {
    switch reply {
    case .size(let size):
      fuse_reply_xattr(raw, size)
    case .bytes(let bytes):
      bytes.withUnsafeBufferPointer { buffer in
        _ = fuse_reply_buf(
          raw, UnsafeRawPointer(buffer.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) },
          buffer.count)
      }
    case .error(let error):
      fuse_reply_err(raw, error.rawValue)
    }
    discard self
  }

  private func setOpenFlags(_ open: OpenReply, _ info: UnsafeMutablePointer<fuse_file_info>) {
    cfuse_set_open_flags(
      info, open.handle, open.directIO ? 1 : 0, open.keepCache ? 1 : 0, open.nonSeekable ? 1 : 0,
      open.cacheDirectory ? 1 : 0, open.noFlush ? 1 : 0)
  }
}
