import Glibc
import SystemPackage

extension DocumentFileSystem {
  /// EACCES unless `caller` may `wanted` (AccessCheck's read, write, execute) the node; nothing
  /// when the kernel checks modes itself.
  func require(_ wanted: UInt32, _ node: Node, _ caller: Caller) throws(Errno) {
    try require(wanted, mode: node.mode, uid: node.uid, gid: node.gid, caller)
  }

  func require(_ wanted: UInt32, mode: UInt32, uid: UInt32, gid: UInt32, _ caller: Caller)
    throws(Errno)
  {
    guard checksPermissions else { return }
    if !AccessCheck.allows(wanted, mode: mode, uid: uid, gid: gid, caller: caller) {
      throw .permissionDenied
    }
  }

  /// `require` for a node of `.versions` or `.history`, by its attributes.
  func requireVirtual(_ wanted: UInt32, _ inode: UInt64, _ caller: Caller) throws(Errno) {
    guard checksPermissions else { return }
    let attributes = try lock.withLock { () throws(Errno) -> stat in try virtualAttributes(inode) }
    try require(
      wanted, mode: attributes.st_mode, uid: attributes.st_uid, gid: attributes.st_gid, caller)
  }

  /// The checks of taking `child`'s name away from `folder` (unlink, rmdir, a rename's source
  /// and the name it replaces): write and search on the folder, then the sticky bit.
  func requireMayRemove(_ child: Node, from folder: Node, _ caller: Caller) throws(Errno) {
    guard checksPermissions else { return }
    try require(AccessCheck.write | AccessCheck.execute, folder, caller)
    let allowed = AccessCheck.mayRemove(
      childUID: child.uid, folderMode: folder.mode, folderUID: folder.uid, caller: caller)
    if !allowed { throw .notPermitted }
  }

  /// The checks of a name that a rename (or choosing a version) moves into `folder`: replacing
  /// `target` as `requireMayRemove` allows, or making a new name.
  func requireMayTake(_ target: Node?, in folder: Node, _ caller: Caller) throws(Errno) {
    if let target {
      try requireMayRemove(target, from: folder, caller)
    } else {
      try require(AccessCheck.write | AccessCheck.execute, folder, caller)
    }
  }

  /// The checks of a rename, in vfs_rename's order: the source's name may go, the target's name
  /// may be replaced (or made), and a folder that changes parent must be writable (its `..`
  /// changes), as must the target folder that an exchange sends the other way.
  func requireMayRename(
    _ source: Node, from: Node, target: Node?, to: Node, exchange: Bool, _ caller: Caller
  ) throws(Errno) {
    guard checksPermissions else { return }
    try requireMayRemove(source, from: from, caller)
    try requireMayTake(target, in: to, caller)
    guard from !== to else { return }
    if source.isDirectory { try require(AccessCheck.write, source, caller) }
    if exchange, let target, target.isDirectory { try require(AccessCheck.write, target, caller) }
  }

  /// The access an open asks for by its flags. O_TRUNC never reaches here: the kernel sends it
  /// as a setattr through the new handle, which ``requireMayChange`` checks.
  static func accessWanted(openFlags flags: Int32) -> UInt32 {
    switch flags & O_ACCMODE {
    case O_WRONLY: AccessCheck.write
    case O_RDWR: AccessCheck.read | AccessCheck.write
    default: AccessCheck.read
    }
  }

  /// The checks of one setattr, as setattr_prepare and its callers make them: owners change
  /// modes and set times; chown and chgrp as `AccessCheck.mayChangeOwner` decides; truncating
  /// by path, or through a handle opened only for reading (open with O_TRUNC, which the kernel
  /// turns into a setattr), and touching times to now need write permission.
  func requireMayChange(_ node: Node, _ update: AttributeUpdate, _ caller: Caller) throws(Errno) {
    guard checksPermissions else { return }
    if update.mode != nil && !AccessCheck.owns(node.uid, caller: caller) { throw .notPermitted }
    if update.uid != nil || update.gid != nil {
      let allowed = AccessCheck.mayChangeOwner(
        from: node.uid, gid: node.gid, to: update.uid, newGID: update.gid, caller: caller)
      if !allowed { throw .notPermitted }
    }
    if update.size != nil {
      let writableHandle = update.handle.flatMap { openFiles[$0] }.map {
        $0.inode == node.inode && $0.writable
      }
      if writableHandle != true { try require(AccessCheck.write, node, caller) }
    }
    var setsTime = false
    var touches = false
    for time in [update.accessTime, update.modificationTime] {
      switch time {
      case .nanoseconds?: setsTime = true
      case .now?: touches = true
      case nil: break
      }
    }
    if setsTime && !AccessCheck.owns(node.uid, caller: caller) { throw .notPermitted }
    if touches && !AccessCheck.owns(node.uid, caller: caller) {
      try require(AccessCheck.write, node, caller)
    }
  }

  /// A folder that loses a search bit, an owner or a group: the kernel walks the names it has
  /// cached below it without asking, so they are dropped and the next walk looks them up here.
  /// Sent after the reply, from the invalidation thread (the kernel holds the folder's lock
  /// during the setattr): a walk that starts before they arrive may still pass.
  func dropCachedNamesIfSearchLost(_ folder: Node, oldMode: UInt32, oldUID: UInt32, oldGID: UInt32)
  {
    guard checksPermissions, folder.isDirectory else { return }
    let lostSearch = oldMode & ~folder.mode & 0o111 != 0
    guard lostSearch || oldUID != folder.uid || oldGID != folder.gid else { return }
    for name in folder.children.keys {
      invalidations.post(.entry(parent: folder.inode, name: name))
    }
  }
}
