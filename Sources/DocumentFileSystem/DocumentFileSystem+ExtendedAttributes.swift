import DocumentModel
import Glibc
import LocalStore
import SystemPackage

extension DocumentFileSystem {
  static let userNamespace = Array("user.".utf8)
  static let maximumAttributeValue = 65536
  // XATTR_CREATE and XATTR_REPLACE from <sys/xattr.h>, which Glibc's module does not export.
  static let createOnly: Int32 = 1
  static let replaceOnly: Int32 = 2
  /// On a document in conflict: how many conflict versions it has, so that file managers and
  /// prompts can mark it. Kept by docsync, not by the file: refused for writing.
  static let conflictsAttribute = Array("user.docsync.conflicts".utf8)
  /// On a document: where its content is (`ContentAvailability`: every document is `local`
  /// until files on demand are built) and ` upload` while the hub lacks a change of it. Kept
  /// by docsync, refused for writing, and not listed, so that `cp -a` and `rsync -X` from the
  /// mount do not try to copy it (it would be refused at their destination in a mount).
  static let stateAttribute = Array("user.docsync.state".utf8)

  /// The number of conflict versions of the document at `inode`, when it has any. Asks the
  /// engine, so it is called without the tree lock.
  func conflictCount(of inode: UInt64) -> Int? {
    guard let engine, let path = lock.withLock({ path(of: inode) }),
      let count = engine.conflicts()[path]?.count, count > 0
    else { return nil }
    return count
  }

  /// Only `user.` attributes are kept (and synced later); the other namespaces belong to the
  /// system. POSIX ACL names get ENODATA on read and EOPNOTSUPP on write, so that `cp -a` and
  /// vim's save (which sets an ACL xattr) carry on as on a file system without ACLs.
  static func isUserAttribute(_ name: [UInt8]) -> Bool {
    name.count > userNamespace.count && name.starts(with: userNamespace)
  }

  /// setxattr, with XATTR_CREATE and XATTR_REPLACE.
  public func setExtendedAttribute(
    inode: UInt64, name: [UInt8], value: UnsafeRawBufferPointer, flags: Int32, caller: Caller
  ) throws(Errno) {
    if Self.isVirtual(inode) { throw .readOnlyFileSystem }
    if name == Self.conflictsAttribute || name == Self.stateAttribute { throw .permissionDenied }
    try lock.withLock { () throws(Errno) in
      let node = try node(inode)
      if name.isEmpty || name.count > 255 { throw .outOfRange }
      guard Self.isUserAttribute(name) else { throw .notSupportedOnSocket }
      // As Linux: user attributes exist only on regular files and folders.
      guard node.isRegular || node.isDirectory else { throw .notPermitted }
      try require(AccessCheck.write, node, caller)
      if value.count > Self.maximumAttributeValue { throw .argListTooLong }
      let exists = node.extendedAttributes[name] != nil
      if flags & Self.createOnly != 0 && exists { throw .fileExists }
      if flags & Self.replaceOnly != 0 && !exists { throw .noData }
      let bytes = [UInt8](value)
      touchChangeTime(node)
      try persist([
        .putExtendedAttribute(ExtendedAttributeRecord(inode: inode, name: name, value: bytes)),
        .putInode(node.record),
      ])
      node.extendedAttributes[name] = bytes
    }
  }

  /// getxattr: the whole value.
  public func extendedAttribute(inode: UInt64, name: [UInt8], caller: Caller) throws(Errno)
    -> [UInt8]
  {
    if Self.isVirtual(inode) {
      if Self.isUserAttribute(name) { try requireVirtual(AccessCheck.read, inode, caller) }
      guard let value = virtualExtendedAttributes(inode)[name] else { throw .noData }
      return value
    }
    if name == Self.conflictsAttribute {
      try lock.withLock { () throws(Errno) in try require(AccessCheck.read, node(inode), caller) }
      guard let count = conflictCount(of: inode) else { throw .noData }
      return Array(String(count).utf8)
    }
    if name == Self.stateAttribute { return try contentState(of: inode, caller: caller) }
    return try lock.withLock { () throws(Errno) -> [UInt8] in
      let node = try node(inode)
      if Self.isUserAttribute(name) { try require(AccessCheck.read, node, caller) }
      guard let value = node.extendedAttributes[name] else { throw .noData }
      return value
    }
  }

  /// The value of `user.docsync.state` of the document at `inode`. Asks the engine, so the
  /// tree lock is let go first.
  func contentState(of inode: UInt64, caller: Caller) throws(Errno) -> [UInt8] {
    let (documentPath, writing) = try lock.withLock { () throws(Errno) -> (DocumentPath?, Bool) in
      let node = try node(inode)
      try require(AccessCheck.read, node, caller)
      guard node.isRegular else { throw .noData }
      return (path(of: inode), node.writers > 0)
    }
    let waiting = writing || (documentPath.map { engine?.waitsToUpload($0) ?? false } ?? false)
    // Every document's content is whole on this device until files on demand are built.
    return Array(ContentAvailability.local.attribute(waitingToUpload: waiting).utf8)
  }

  /// listxattr.
  public func extendedAttributeNames(inode: UInt64) throws(Errno) -> [[UInt8]] {
    if Self.isVirtual(inode) {
      return virtualExtendedAttributes(inode).keys.sorted { $0.lexicographicallyPrecedes($1) }
    }
    let extra = conflictCount(of: inode) == nil ? [] : [Self.conflictsAttribute]
    return try lock.withLock { () throws(Errno) -> [[UInt8]] in
      return try (node(inode).extendedAttributes.keys + extra).sorted {
        $0.lexicographicallyPrecedes($1)
      }
    }
  }

  /// removexattr.
  public func removeExtendedAttribute(inode: UInt64, name: [UInt8], caller: Caller) throws(Errno) {
    if Self.isVirtual(inode) { throw .readOnlyFileSystem }
    try lock.withLock { () throws(Errno) in
      let node = try node(inode)
      if Self.isUserAttribute(name) { try require(AccessCheck.write, node, caller) }
      guard node.extendedAttributes[name] != nil else { throw .noData }
      touchChangeTime(node)
      try persist([.deleteExtendedAttribute(inode: inode, name: name), .putInode(node.record)])
      node.extendedAttributes[name] = nil
    }
  }
}
