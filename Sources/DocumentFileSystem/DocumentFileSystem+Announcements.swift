import DocumentModel
import Glibc
import SystemPackage

/// The requests of the raising process (see ``AnnouncementQueue``): sync's changes are in the
/// tree already, and each request only lets the kernel raise the event of a change, so none of
/// them changes anything or is ever noted as a local edit.
extension DocumentFileSystem {
  public func isAnnouncer(_ pid: Int32) -> Bool { announcements.isAnnouncer(pid) }

  /// Whether the kernel knows an inode other than through the raising process's own calls.
  private func known(_ inode: UInt64) -> Bool {
    inode == Self.rootInode
      || ((nodes[inode]?.lookups ?? 0) > 0 && !announcements.isQuiet(inode))
  }

  /// Whether to raise `announcement`: only where the kernel knows the folder or the inode (a
  /// watch holds the inode it watches, and so a lookup of it), and while the path still
  /// shows what sync made.
  public func plan(_ announcement: Announcement) -> AnnouncementPlan {
    // `.versions` keeps no lookup counts; conflicts are few.
    if Self.isVirtual(announcement.parent) { return .raise(size: 0) }
    return lock.withLock { () -> AnnouncementPlan in
      guard known(announcement.parent) || known(announcement.inode),
        let folder = nodes[announcement.parent]
      else { return .skip }
      let child = folder.children[announcement.name]
      switch announcement.kind {
      case .removed:
        return child == nil ? .raise(size: 0) : .skip
      case .created:
        return child == announcement.inode && known(announcement.parent) ? .raise(size: 0) : .skip
      case .contentChanged, .modeChanged:
        guard child == announcement.inode, let node = nodes[announcement.inode] else {
          return .skip
        }
        guard node.isRegular else { return .raise(size: 0) }
        guard let info = store.content.workingFileStatus(node.inode) else { return .skip }
        return .raise(size: Int64(info.st_size))
      }
    }
  }

  private func matches(_ parent: UInt64, _ name: [UInt8]) -> Announcement? {
    guard let current = announcements.current, current.parent == parent, current.name == name
    else { return nil }
    return current
  }

  public func announcedLookup(parent: UInt64, name: [UInt8]) -> AnnouncedLookup {
    lock.withLock { () -> AnnouncedLookup in
      guard let current = matches(parent, name) else { return .normal }
      switch current.kind {
      case .created:
        return .hidden
      case .removed(let kind):
        guard nodes[parent]?.children[name] == nil else { return .normal }
        return .found(removedAttributes(current.inode, kind))
      case .contentChanged, .modeChanged:
        return .normal
      }
    }
  }

  /// The attributes of a removed entry for the kernel to remove: with one link, so that the
  /// kernel's unlink has one to drop. An inode dropped already gets a stand-in of its kind;
  /// the kernel forgets it after the unlink.
  private func removedAttributes(_ inode: UInt64, _ kind: Announcement.EntryKind) -> stat {
    var result = stat()
    if let node = nodes[inode], let found = try? self.attributes(node) {
      node.lookups += 1
      result = found
    } else {
      let root = nodes[Self.rootInode]!
      result.st_ino = UInt(inode)
      result.st_uid = root.uid
      result.st_gid = root.gid
      result.st_mode =
        switch kind {
        case .file: UInt32(S_IFREG) | 0o600
        case .directory: UInt32(S_IFDIR) | 0o700
        case .symlink: UInt32(S_IFLNK) | 0o777
        }
    }
    result.st_nlink = kind == .directory ? 2 : 1
    return result
  }

  /// create, mknod, mkdir and symlink of the raising process: the node sync made, which the
  /// kernel then holds one more reference to.
  public func announcedEntry(parent: UInt64, name: [UInt8]) throws(Errno) -> stat {
    if Self.isVirtual(parent) {
      guard let current = matches(parent, name), case .created = current.kind else {
        throw .fileExists
      }
      // Not under the tree lock: `.versions` asks the engine.
      return try virtualLookup(parent: parent, name: name)
    }
    return try lock.withLock { () throws(Errno) -> stat in
      guard let current = matches(parent, name), case .created = current.kind,
        nodes[parent]?.children[name] == current.inode, let node = nodes[current.inode]
      else { throw .fileExists }
      let result = try attributes(node)
      if node.lookups == 0 { announcements.markQuiet(node.inode) }
      node.lookups += 1
      return result
    }
  }

  /// A handle for the raising process's create or open, which reads and writes nothing.
  public func announcedHandle() -> UInt64 { announcements.openHandle() }

  /// open of the raising process: only of the file whose new content it announces.
  public func announcedOpen(inode: UInt64) throws(Errno) -> UInt64 {
    guard let current = announcements.current, current.inode == inode,
      case .contentChanged = current.kind
    else { throw .notPermitted }
    return announcements.openHandle()
  }

  /// setattr of the raising process (a truncate through its own handle, a chmod of the file
  /// whose mode it announces): the attributes as they are, changed by nothing.
  public func announcedAttributes(inode: UInt64, handle: UInt64?) throws(Errno) -> stat {
    let current = announcements.current
    let allowed =
      switch current?.kind {
      case .contentChanged: handle.map(announcements.isOwnHandle) ?? false
      case .modeChanged: true
      default: false
      }
    guard allowed, current?.inode == inode else { throw .notPermitted }
    return try attributes(inode: inode)
  }

  /// unlink and rmdir of the raising process: the name is gone already.
  public func announcedRemoval(parent: UInt64, name: [UInt8]) throws(Errno) {
    try lock.withLock { () throws(Errno) in
      guard let current = matches(parent, name), case .removed = current.kind,
        nodes[parent]?.children[name] == nil
      else { throw .notPermitted }
    }
  }
}
