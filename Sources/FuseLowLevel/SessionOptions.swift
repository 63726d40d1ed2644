import Glibc

/// How a `Session` mounts and serves: everything that becomes a libfuse option.
///
/// `default_permissions`, so the kernel checks modes, only where other users can reach the mount.
/// The mount stays private to its owner unless `allowOther`. Never on: `noatime`.
public struct SessionOptions: Sendable {
  public var mountPoint: String
  /// The "device" column of /proc/mounts and df.
  public var fsName: String
  /// Shown as the type `fuse.<subtype>`.
  public var subtype: String
  /// Let other users (root included) use the mount; needs `user_allow_other` in
  /// /etc/fuse.conf unless the mounter is root.
  public var allowOther: Bool
  /// Have the kernel check every access against the modes (`default_permissions`). Needed
  /// where other users reach the mount; `kernelChecksModes(allowOther:)` says when.
  public var checksModes: Bool
  /// Let the kernel cache writes and send them later; off until the file system is ready for
  /// the kernel to own mtime and size between flushes.
  public var writebackCache: Bool
  /// Let the kernel read and write regular files straight from the backing files that opens
  /// name (FUSE passthrough, Linux 6.9 and later). It needs CAP_SYS_ADMIN; without it, or on
  /// an older kernel, reads and writes come as requests.
  public var passthrough: Bool
  /// Serve requests from io_uring queues, one per CPU, where the kernel offers FUSE over
  /// io_uring (Linux 6.14 and later, with the fuse module's `enable_uring` on); otherwise,
  /// or when registering the queues fails, every request comes through /dev/fuse.
  public var ioUring: Bool
  /// Clear setuid and setgid in the file system rather than have the kernel ask for
  /// `security.capability` before writes (FUSE_HANDLE_KILLPRIV_V2): the file system must then
  /// honour `RequestContext.clearsSetID` on write and `AttributeChanges.clearSetID` on setattr.
  public var handleKillPrivileges: Bool
  /// Worker threads kept waiting for requests.
  public var maxIdleThreads: UInt32
  /// The most worker threads libfuse starts.
  public var maxThreads: UInt32
  /// libfuse prints every request and reply to stderr.
  public var debug: Bool

  public init(
    mountPoint: String, fsName: String = "docsync", subtype: String = "docsync",
    allowOther: Bool = false, checksModes: Bool = true, writebackCache: Bool = false,
    passthrough: Bool = true,
    ioUring: Bool = true, handleKillPrivileges: Bool = false, maxIdleThreads: UInt32 = 10,
    maxThreads: UInt32 = 10, debug: Bool = false
  ) {
    self.mountPoint = mountPoint
    self.fsName = fsName
    self.subtype = subtype
    self.allowOther = allowOther
    self.checksModes = checksModes
    self.writebackCache = writebackCache
    self.passthrough = passthrough
    self.ioUring = ioUring
    self.handleKillPrivileges = handleKillPrivileges
    self.maxIdleThreads = maxIdleThreads
    self.maxThreads = maxThreads
    self.debug = debug
  }

  /// Whether a mount needs the kernel's mode checks: only where other users reach it. A private
  /// mount is reached only by processes whose user and group ids are all the mounter's
  /// (fuse_allow_current_process), so it is no boundary between users, and the file system
  /// checks modes for them itself (`DocumentFileSystem.checksPermissions`), as passthrough_ll
  /// leaves them to its backing disk. Under the kernel's checks, every create, rename and
  /// unlink in a folder drops the folder's cached attributes (fuse_dir_changed), so the next
  /// one in it waits for a GETATTR first: two of the eleven requests of an editor's save.
  /// Executable bits of files are checked by the kernel either way.
  public static func kernelChecksModes(allowOther: Bool) -> Bool {
    allowOther
  }
}
