import CFuse
import SystemPackage

/// Tells the kernel to drop what it cached about inodes and names that changed behind its back.
///
/// Call it only from a thread that holds no file-system lock and is not serving a request: the
/// kernel may wait for the inode or directory lock of a request in flight, and that request may
/// wait for the lock the caller holds (libfuse's fuse_lowlevel.h says the same). A dedicated
/// dispatcher thread is the intended caller.
///
/// The notifier keeps the libfuse session's memory alive, so it is safe to call at any time;
/// before the kernel's INIT it throws `.noFunction` (ENOSYS), after unmount `.operationNotSupportedByDevice` (ENODEV) or
/// `.socketNotConnected` (ENOTCONN), and `.noSuchFileOrDirectory` when the kernel had nothing cached, which a
/// caller may ignore.
public struct KernelNotifier: Sendable {
  let native: NativeSession

  /// Drops only the cached attributes of `inode`. Unlike the other calls, a request handler may
  /// make this one: with a negative offset the kernel (fuse_reverse_inval_inode) takes no inode
  /// or page lock, it only marks the attributes stale, so it never waits on a request.
  public func invalidateAttributes(_ inode: UInt64) throws(Errno) {
    try invalidateInode(inode, offset: -1, length: 0)
  }

  /// Drops the cached attributes of `inode` and its cached data in `offset..<offset+length`;
  /// a length of 0 means to the end, a negative offset drops only the attributes.
  public func invalidateInode(_ inode: UInt64, offset: Int64 = 0, length: Int64 = 0) throws(Errno) {
    try check(fuse_lowlevel_notify_inval_inode(native.pointer, inode, off_t(offset), off_t(length)))
  }

  /// Drops the cached lookup of `name` in `parent`, so the next access looks it up again.
  public func invalidateEntry(parent: UInt64, name: [UInt8]) throws(Errno) {
    let result = name.withUnsafeBufferPointer { bytes in
      bytes.withMemoryRebound(to: CChar.self) { characters in
        fuse_lowlevel_notify_inval_entry(
          native.pointer, parent, characters.baseAddress, characters.count)
      }
    }
    try check(result)
  }

  /// Tells the kernel that `name` in `parent`, which was `child`, is gone (like an unlink),
  /// which also detaches it from anyone's current directory.
  public func deleteEntry(parent: UInt64, child: UInt64, name: [UInt8]) throws(Errno) {
    let result = name.withUnsafeBufferPointer { bytes in
      bytes.withMemoryRebound(to: CChar.self) { characters in
        fuse_lowlevel_notify_delete(
          native.pointer, parent, child, characters.baseAddress, characters.count)
      }
    }
    try check(result)
  }

  private func check(_ result: Int32) throws(Errno) {
    if let error = Errno.fromNegatedReturn(result) { throw error }
  }
}
