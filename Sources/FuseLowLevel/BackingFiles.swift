import CFuseIO
import Glibc
import Synchronization

/// The backing files registered with the kernel for FUSE passthrough, one per open inode.
///
/// The kernel refuses a second backing file for an inode that is open already (EBUSY), so
/// every open of an open inode reuses the first one's id, and the id is dropped when the last
/// of those opens is released. The kernel also refuses passthrough and cached opens of one
/// inode at once (ETXTBSY, and EIO for a cached open of a passed-through inode), so a
/// registration that fails (no CAP_SYS_ADMIN in a user namespace, a working file on a stacked
/// file system) turns passthrough off for inodes not yet open, while open ones keep theirs.
final class BackingFiles: Sendable {
  private struct Backing {
    var id: Int32
    var handles: Set<UInt64>
  }

  private struct State {
    var session: UInt = 0
    var failed = false
    var byInode: [UInt64: Backing] = [:]
  }

  private let state = Mutex(State())

  /// Set once the session exists, before it serves requests.
  func attach(_ session: OpaquePointer) {
    state.withLock { $0.session = UInt(bitPattern: session) }
  }

  /// The backing id for an open of `inode` under `handle`, or nil to serve it with requests.
  func acquire(inode: UInt64, handle: UInt64, descriptor: Int32) -> Int32? {
    guard cfuse_io_passthrough_active() != 0 else { return nil }
    return state.withLock { state -> Int32? in
      if var backing = state.byInode[inode] {
        backing.handles.insert(handle)
        state.byInode[inode] = backing
        return backing.id
      }
      guard !state.failed, let session = OpaquePointer(bitPattern: state.session) else {
        return nil
      }
      let id = cfuse_io_backing_open(session, descriptor)
      guard id > 0 else {
        state.failed = true
        return nil
      }
      state.byInode[inode] = Backing(id: id, handles: [handle])
      return id
    }
  }

  /// The backing id of `inode` when it is passed through already, now shared with `handle`;
  /// nil when it is not.
  func acquireShared(inode: UInt64, handle: UInt64) -> Int32? {
    state.withLock { state -> Int32? in
      guard var backing = state.byInode[inode] else { return nil }
      backing.handles.insert(handle)
      state.byInode[inode] = backing
      return backing.id
    }
  }

  /// The open under `handle` is gone (released, or its reply never reached the kernel).
  func release(inode: UInt64, handle: UInt64) {
    state.withLock { state in
      guard var backing = state.byInode[inode], backing.handles.remove(handle) != nil else {
        return
      }
      if backing.handles.isEmpty {
        state.byInode[inode] = nil
        if let session = OpaquePointer(bitPattern: state.session) {
          _ = cfuse_io_backing_close(session, backing.id)
        }
      } else {
        state.byInode[inode] = backing
      }
    }
  }
}
