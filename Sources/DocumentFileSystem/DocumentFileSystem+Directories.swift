import Glibc
import LocalStore
import SystemPackage

extension DocumentFileSystem {
  /// Makes a node record for a new inode in `folder`, owned by the caller; a set-group-id
  /// folder passes its group on, as on a local disk.
  func newRecord(in folder: Node, mode: UInt32, caller: Caller, rdev: UInt64 = 0) -> InodeRecord {
    let now = currentTime()
    let inheritsGroup = folder.mode & UInt32(S_ISGID) != 0
    var mode = mode
    if inheritsGroup && mode & UInt32(S_IFMT) == UInt32(S_IFDIR) { mode |= UInt32(S_ISGID) }
    return InodeRecord(
      inode: allocateInode(), mode: mode, uid: caller.uid,
      gid: inheritsGroup ? folder.gid : caller.gid,
      rdev: rdev, accessTime: now, modificationTime: now, changeTime: now, target: nil)
  }

  /// Adds a new inode under `name` in one transaction and returns it with one lookup counted.
  func insert(_ record: InodeRecord, name: [UInt8], in folder: Node) throws(Errno) -> Node {
    let now = record.changeTime
    folder.modificationTime = now
    folder.changeTime = now
    try persistNewInode([
      .putInode(record),
      .putEntry(EntryRecord(parent: folder.inode, name: name, inode: record.inode)),
      .putInode(folder.record),
    ])
    let node = Node(record: record)
    node.linkCount = 1
    node.lookups = 1
    node.names = [(folder.inode, name)]
    nodes[record.inode] = node
    folder.children[name] = record.inode
    if node.isDirectory {
      node.parent = folder.inode
      folder.subdirectories += 1
    }
    note(.create, parent: folder.inode, name: name)
    return node
  }

  /// mkdir.
  public func makeDirectory(parent: UInt64, name: [UInt8], mode: UInt32, caller: Caller)
    throws(Errno) -> stat
  {
    try lock.withLock { () throws(Errno) -> stat in
      let folder = try prepareNewName(parent: parent, name: name, caller: caller)
      let record = newRecord(in: folder, mode: UInt32(S_IFDIR) | (mode & 0o7777), caller: caller)
      return try attributes(insert(record, name: name, in: folder))
    }
  }

  /// mknod and mkfifo; a regular file made this way gets an empty working file.
  public func makeNode(parent: UInt64, name: [UInt8], mode: UInt32, device: UInt64, caller: Caller)
    throws(Errno) -> stat
  {
    try lock.withLock { () throws(Errno) -> stat in
      var type = mode & UInt32(S_IFMT)
      if type == 0 { type = UInt32(S_IFREG) }
      switch type {
      case S_IFREG, S_IFIFO, S_IFCHR, S_IFBLK, S_IFSOCK: break
      default: throw .invalidArgument
      }
      let folder = try prepareNewName(parent: parent, name: name, caller: caller)
      let isDevice = type == UInt32(S_IFCHR) || type == UInt32(S_IFBLK)
      let record = newRecord(
        in: folder, mode: type | (mode & 0o7777), caller: caller, rdev: isDevice ? device : 0)
      if type == UInt32(S_IFREG) {
        close(try store.content.createWorkingFile(record.inode, flags: 0))
      }
      return try attributes(insert(record, name: name, in: folder))
    }
  }

  /// symlink.
  public func symlink(target: [UInt8], parent: UInt64, name: [UInt8], caller: Caller)
    throws(Errno) -> stat
  {
    try lock.withLock { () throws(Errno) -> stat in
      if target.count >= Int(PATH_MAX) { throw .fileNameTooLong }
      let folder = try prepareNewName(parent: parent, name: name, caller: caller)
      var record = newRecord(in: folder, mode: UInt32(S_IFLNK) | 0o777, caller: caller)
      record.target = target
      return try attributes(insert(record, name: name, in: folder))
    }
  }

  /// link: another name for an existing inode.
  public func link(inode: UInt64, newParent: UInt64, newName: [UInt8], caller: Caller)
    throws(Errno) -> stat
  {
    if Self.isVirtual(inode) { throw .readOnlyFileSystem }
    return try lock.withLock { () throws(Errno) -> stat in
      let node = try node(inode)
      let folder = try prepareNewName(parent: newParent, name: newName, caller: caller)
      if node.isDirectory { throw .notPermitted }
      if node.isRemoved { throw .noSuchFileOrDirectory }
      let now = currentTime()
      folder.modificationTime = now
      folder.changeTime = now
      touchChangeTime(node)
      try persist([
        .putEntry(EntryRecord(parent: newParent, name: newName, inode: inode)),
        .putInode(folder.record), .putInode(node.record),
      ])
      folder.children[newName] = inode
      node.linkCount += 1
      node.lookups += 1
      node.names.append((newParent, newName))
      note(.create, parent: newParent, name: newName)
      return try attributes(node)
    }
  }

  /// The changes that take the entry `name` away from `folder`; the caller applies them.
  func detach(_ child: Node, name: [UInt8], from folder: Node, now: Int64) -> [Change] {
    folder.children[name] = nil
    folder.modificationTime = now
    folder.changeTime = now
    child.linkCount -= 1
    child.removeName(parent: folder.inode, name: name)
    if child.isDirectory {
      folder.subdirectories -= 1
      child.parent = 0
    }
    var changes: [Change] = [
      .deleteEntry(parent: folder.inode, name: name), .putInode(folder.record),
    ]
    if child.isRemoved {
      changes.append(.deleteInode(child.inode))
    } else {
      touchChangeTime(child)
      changes.append(.putInode(child.record))
    }
    return changes
  }

  /// unlink.
  public func unlink(parent: UInt64, name: [UInt8], caller: Caller) throws(Errno) {
    if Self.isVirtual(parent) {
      try requireVirtual(AccessCheck.write | AccessCheck.execute, parent, caller)
      return try virtualUnlink(parent: parent, name: name)
    }
    try lock.withLock { () throws(Errno) in
      try Self.validate(name: name)
      let folder = try directory(parent)
      if Self.isReserved(parent: parent, name: name) { throw .isDirectory }
      guard let inode = folder.children[name], let child = nodes[inode] else {
        throw .noSuchFileOrDirectory
      }
      try requireMayRemove(child, from: folder, caller)
      if child.isDirectory { throw .isDirectory }
      try remove(child, name: name, from: folder)
    }
  }

  /// rmdir.
  public func removeDirectory(parent: UInt64, name: [UInt8], caller: Caller) throws(Errno) {
    if Self.isVirtual(parent) {
      try requireVirtual(AccessCheck.write | AccessCheck.execute, parent, caller)
      return try virtualRemoveDirectory(parent: parent, name: name)
    }
    try lock.withLock { () throws(Errno) in
      try Self.validate(name: name)
      if name == Array(".".utf8) { throw .invalidArgument }
      if name == Array("..".utf8) { throw .directoryNotEmpty }
      let folder = try directory(parent)
      if Self.isReserved(parent: parent, name: name) { throw .readOnlyFileSystem }
      guard let inode = folder.children[name], let child = nodes[inode] else {
        throw .noSuchFileOrDirectory
      }
      try requireMayRemove(child, from: folder, caller)
      guard child.isDirectory else { throw .notDirectory }
      guard child.children.isEmpty else { throw .directoryNotEmpty }
      try remove(child, name: name, from: folder)
    }
  }

  /// Takes a name away in one transaction, putting memory back if the commit fails.
  private func remove(_ child: Node, name: [UInt8], from folder: Node) throws(Errno) {
    note(.remove, parent: folder.inode, name: name)
    let snapshot = (folder.record, child.record, child.linkCount)
    let changes = detach(child, name: name, from: folder, now: currentTime())
    do throws(Errno) {
      try persist(changes)
    } catch {
      restore(folder: folder, snapshot.0, child: child, snapshot.1, links: snapshot.2, name: name)
      throw error
    }
    reapIfUnused(child)
  }

  private func restore(
    folder: Node, _ folderRecord: InodeRecord, child: Node, _ childRecord: InodeRecord, links: Int,
    name: [UInt8]
  ) {
    folder.modificationTime = folderRecord.modificationTime
    folder.changeTime = folderRecord.changeTime
    folder.children[name] = child.inode
    child.linkCount = links
    child.names.append((folder.inode, name))
    if child.isDirectory {
      folder.subdirectories += 1
      child.parent = folder.inode
    }
  }

  /// Whether `ancestor` is `inode` or one of the folders above it.
  func isAncestor(_ ancestor: UInt64, of inode: UInt64) -> Bool {
    var current = inode
    while true {
      if current == ancestor { return true }
      if current == Self.rootInode { return false }
      guard let node = nodes[current], node.parent != 0 else { return false }
      current = node.parent
    }
  }

  /// rename and renameat2 with RENAME_NOREPLACE or RENAME_EXCHANGE.
  public func rename(
    parent: UInt64, name: [UInt8], newParent: UInt64, newName: [UInt8], options: RenameOptions,
    caller: Caller
  ) throws(Errno) {
    // RENAME_WHITEOUT (an overlay's upper layer) and any later flag: refused as Linux does for
    // a flag a file system does not carry out, rather than done as a plain rename that
    // leaves no whiteout behind.
    if !RenameOptions.supported.isSuperset(of: options) { throw .invalidArgument }
    if Self.isVirtual(newParent) { throw .readOnlyFileSystem }
    if Self.isVirtual(parent) {
      if options.contains(.exchange) { throw .readOnlyFileSystem }
      try requireVirtual(AccessCheck.write | AccessCheck.execute, parent, caller)
      // Choosing a version replaces the document: the checks of a rename over it.
      try lock.withLock { () throws(Errno) in
        let to = try directory(newParent)
        try requireMayTake(to.children[newName].flatMap { nodes[$0] }, in: to, caller)
      }
      return try virtualRename(parent: parent, name: name, newParent: newParent, newName: newName)
    }
    try lock.withLock { () throws(Errno) in
      if options.contains(.noReplace) && options.contains(.exchange) { throw .invalidArgument }
      try Self.validate(name: name)
      try Self.validate(name: newName)
      let from = try directory(parent)
      let to = try directory(newParent)
      if Self.isReserved(parent: parent, name: name)
        || Self.isReserved(parent: newParent, name: newName)
      {
        throw .readOnlyFileSystem
      }
      guard let sourceInode = from.children[name], let source = nodes[sourceInode] else {
        throw .noSuchFileOrDirectory
      }
      if to.isRemoved { throw .noSuchFileOrDirectory }
      let targetInode = to.children[newName]
      let target = targetInode.flatMap { nodes[$0] }
      try requireMayRename(
        source, from: from, target: target, to: to, exchange: options.contains(.exchange), caller)
      let now = currentTime()

      if options.contains(.exchange) {
        guard let target else { throw .noSuchFileOrDirectory }
        if source.isDirectory && isAncestor(source.inode, of: newParent) { throw .invalidArgument }
        if target.isDirectory && isAncestor(target.inode, of: parent) { throw .invalidArgument }
        from.children[name] = target.inode
        to.children[newName] = source.inode
        source.removeName(parent: parent, name: name)
        source.names.append((newParent, newName))
        target.removeName(parent: newParent, name: newName)
        target.names.append((parent, name))
        note(.write, parent: parent, name: name)
        note(.write, parent: newParent, name: newName)
        if source.isDirectory != target.isDirectory && from !== to {
          let directoryMovesToNew = source.isDirectory
          from.subdirectories += directoryMovesToNew ? -1 : 1
          to.subdirectories += directoryMovesToNew ? 1 : -1
        }
        if source.isDirectory { source.parent = newParent }
        if target.isDirectory { target.parent = parent }
        for folder in [from, to] {
          folder.modificationTime = now
          folder.changeTime = now
        }
        touchChangeTime(source)
        touchChangeTime(target)
        try persist([
          .putEntry(EntryRecord(parent: parent, name: name, inode: target.inode)),
          .putEntry(EntryRecord(parent: newParent, name: newName, inode: source.inode)),
          .putInode(from.record), .putInode(to.record), .putInode(source.record),
          .putInode(target.record),
        ])
        return
      }

      if let target {
        if options.contains(.noReplace) { throw .fileExists }
        // Two names of one inode: POSIX says rename does nothing and succeeds.
        if target === source { return }
        if source.isDirectory {
          guard target.isDirectory else { throw .notDirectory }
          guard target.children.isEmpty else { throw .directoryNotEmpty }
        } else if target.isDirectory {
          throw .isDirectory
        }
      }
      if source.isDirectory && isAncestor(source.inode, of: newParent) { throw .invalidArgument }

      var changes: [Change] = []
      if let target {
        changes += detach(target, name: newName, from: to, now: now)
      }
      let sourcePath = path(parent: parent, name: name)
      from.children[name] = nil
      to.children[newName] = source.inode
      source.removeName(parent: parent, name: name)
      source.names.append((newParent, newName))
      if let sourcePath, let targetPath = path(parent: newParent, name: newName) {
        engine?.changeLog.note(.rename(from: sourcePath, to: targetPath))
      }
      if source.isDirectory && from !== to {
        from.subdirectories -= 1
        to.subdirectories += 1
      }
      if source.isDirectory { source.parent = newParent }
      for folder in [from, to] {
        folder.modificationTime = now
        folder.changeTime = now
      }
      touchChangeTimeForRename(source)
      changes += [
        .deleteEntry(parent: parent, name: name),
        .putEntry(EntryRecord(parent: newParent, name: newName, inode: source.inode)),
        .putInode(from.record), .putInode(to.record), .putInode(source.record),
      ]
      // Memory already reflects the rename; a failed commit leaves memory ahead of the disk
      // until remount, which is the lesser harm than half-undone state.
      try persist(changes)
      if let target { reapIfUnused(target) }
    }
  }

  // MARK: - Listing

  /// opendir.
  public func openDirectory(inode: UInt64, caller: Caller) throws(Errno) -> UInt64 {
    if Self.isVirtual(inode) {
      _ = try virtualListing(inode)
      try requireVirtual(AccessCheck.read, inode, caller)
    }
    return try lock.withLock { () throws(Errno) -> UInt64 in
      // An open folder lives on after rmdir or a rename over it, as an open file does: its
      // `fstat` still answers (with no links), whatever lookups the kernel gives back.
      if !Self.isVirtual(inode) {
        let folder = try directory(inode)
        try require(AccessCheck.read, folder, caller)
        folder.openCount += 1
      }
      let handle = nextDirectoryHandle
      nextDirectoryHandle += 1
      directoryHandles[handle] = DirectoryHandle(inode: inode)
      return handle
    }
  }

  /// readdir and readdirplus. `emit` returns false when the caller has no room for the entry;
  /// with `plus`, every accepted entry other than "." and ".." counts as a lookup.
  public func readDirectory(
    inode: UInt64, handle: UInt64, offset: Int64, plus: Bool,
    emit: (ListingEntry) -> Bool
  ) throws(Errno) {
    // The virtual listing asks the sync engine, which must not be called under the tree lock.
    let virtualEntries = Self.isVirtual(inode) && offset == 0 ? try virtualListing(inode) : nil
    try lock.withLock { () throws(Errno) in
      guard let listing = directoryHandles[handle], listing.inode == inode else {
        throw .badFileDescriptor
      }
      if let virtualEntries {
        listing.entries = virtualEntries
      } else if offset == 0 {
        try refresh(listing)
      }
      var index = Int(max(offset, 0))
      while index < listing.entries.count {
        let item = listing.entries[index]
        index += 1
        let isDot = index <= 2
        var attributes: stat? = nil
        if plus {
          if Self.isVirtual(item.inode) {
            attributes = try virtualAttributes(item.inode)
          } else if let node = nodes[item.inode] {
            attributes = try self.attributes(node)
          } else {
            continue  // removed since the listing was taken
          }
        }
        let entry = ListingEntry(
          name: item.name, inode: item.inode, type: item.type, nextOffset: Int64(index),
          attributes: attributes)
        guard emit(entry) else { return }
        if plus && !isDot { nodes[item.inode]?.lookups += 1 }
      }
    }
  }

  private func refresh(_ listing: DirectoryHandle) throws(Errno) {
    let directoryType = UInt32(S_IFDIR)
    let folder = try directory(listing.inode)
    let up = listing.inode == Self.rootInode ? Self.rootInode : folder.parent
    var entries: [(name: [UInt8], inode: UInt64, type: UInt32)] = [
      (Array(".".utf8), folder.inode, directoryType), (Array("..".utf8), up, directoryType),
    ]
    if listing.inode == Self.rootInode {
      entries.append((Self.versionsName, Self.versionsInode, directoryType))
    }
    entries.reserveCapacity(folder.children.count + 3)
    for (name, inode) in folder.children {
      entries.append((name, inode, nodes[inode]?.type ?? 0))
    }
    listing.entries = entries
  }

  /// releasedir.
  public func releaseDirectory(handle: UInt64) {
    lock.withLock {
      guard let released = directoryHandles.removeValue(forKey: handle),
        !Self.isVirtual(released.inode), let folder = nodes[released.inode]
      else { return }
      folder.openCount -= 1
      reapIfUnused(folder)
    }
  }

  /// fsyncdir: the folder's entries are in the store's queue and journal; make them durable.
  public func synchronizeDirectory(inode: UInt64) throws(Errno) {
    try flushTree()
  }
}
