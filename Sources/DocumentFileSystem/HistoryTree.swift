import DocumentModel
import Glibc
import SyncEngine
import SystemPackage

/// The virtual `.history` tree: a read-only mirror of the paths of documents with earlier
/// versions (deleted documents included), with one file per earlier version, named as
/// conflict versions are (`VersionsName`), so that every device lists the same names.
///
/// Hidden: the root's listing leaves it out, as ZFS leaves out `.zfs`, so that `cp -r`, `tar`,
/// `rsync`, `du` and `git add` of the mount do not walk every version ever kept; `cd .history`
/// and `ls .history/<path>/` find it. Its inode numbers are handed out on first sight and kept
/// for the life of the mount. Like `VersionsTree`, it asks the sync engine, so its methods
/// never run under the tree lock. A lookup or listing costs O(entries of that one folder)
/// (the engine keeps a `HistoryIndex`); nothing walks the whole history.
final class HistoryTree: @unchecked Sendable {
  /// What a virtual inode stands for.
  enum Key: Hashable {
    case folder(DocumentPath)
    case version(VersionID)
  }

  /// History inode numbers start here, above those of `.versions` (which start at 2^56).
  static let firstInode: UInt64 = 1 << 57
  private let table = VirtualInodes<Key>(
    root: DocumentFileSystem.historyInode, rootKey: .folder(.root), first: firstInode)

  /// Whether an inode belongs to `.history`.
  static func owns(_ inode: UInt64) -> Bool {
    inode == DocumentFileSystem.historyInode || inode >= firstInode
  }

  func inode(for key: Key, record: VersionRecord? = nil) -> UInt64 {
    table.inode(for: key, record: record)
  }

  func key(_ inode: UInt64) -> Key? { table.key(inode) }
  func record(_ inode: UInt64) -> VersionRecord? { table.record(inode) }
}

extension DocumentFileSystem {
  private func historyFolderPath(_ inode: UInt64) throws(Errno) -> DocumentPath {
    guard case .folder(let path)? = history.key(inode) else {
      throw history.key(inode) == nil ? .noSuchFileOrDirectory : .notDirectory
    }
    return path
  }

  private func historyListing(_ prefix: DocumentPath) -> (
    folders: [[UInt8]], versions: [(name: [UInt8], record: VersionRecord)]
  ) {
    guard let engine else { return ([], []) }
    let listing = engine.historyListing(prefix)
    return (listing.folders, listing.versions.map { (VersionsName.name(for: $0), $0) })
  }

  /// `.history` and its folders are read and entered by whoever may read what they mirror (a
  /// document's folder by whoever may read the document; a deleted document's by the mount's
  /// owner) and written by nobody: the kernel refuses creating, renaming and removing inside
  /// before docsync is asked.
  func historyFolderMode(of path: DocumentPath) -> UInt32 {
    let mirrored = path.isRoot ? nodes[Self.rootInode]?.mode : versions.mode(of: path)
    guard let mirrored else { return UInt32(S_IFDIR) | 0o500 }
    if mirrored & UInt32(S_IFMT) == UInt32(S_IFDIR) { return UInt32(S_IFDIR) | mirrored & 0o555 }
    return UInt32(S_IFDIR) | (mirrored & 0o444) | ((mirrored & 0o444) >> 2)
  }

  /// The attributes of `.history` itself, as the root's lookup answers them.
  func historyRootAttributes() -> stat {
    var result = versionsAttributes()
    result.st_ino = UInt(Self.historyInode)
    result.st_mode = historyFolderMode(of: .root)
    return result
  }

  func historyAttributes(_ inode: UInt64) throws(Errno) -> stat {
    var result = versionsAttributes()
    result.st_ino = UInt(inode)
    switch history.key(inode) {
    case .folder(let path)?:
      result.st_mode = historyFolderMode(of: path)
      return result
    case .version?:
      guard let record = history.record(inode) else { throw .noSuchFileOrDirectory }
      result.st_mode = historyVersionMode(of: record.path)
      result.st_nlink = 1
      setVirtualFile(&result, size: record.content.size ?? 0, modified: record.modified)
      return result
    case nil:
      throw .noSuchFileOrDirectory
    }
  }

  /// An earlier version may be read by whoever may read its document now; a deleted
  /// document's versions (or one whose path is now a folder) by the mount's owner only.
  func historyVersionMode(of document: DocumentPath) -> UInt32 {
    guard let mirrored = versions.mode(of: document), mirrored & UInt32(S_IFMT) == UInt32(S_IFREG)
    else { return UInt32(S_IFREG) | 0o400 }
    return UInt32(S_IFREG) | (mirrored & 0o444)
  }

  func historyLookup(parent: UInt64, name: [UInt8]) throws(Errno) -> stat {
    try Self.validate(name: name)
    let prefix = try historyFolderPath(parent)
    refreshModes(name == Array(".".utf8) ? [prefix] : [prefix, prefix.appending(name)])
    if name == Array(".".utf8) { return try historyAttributes(parent) }
    let listing = historyListing(prefix)
    if let match = listing.versions.first(where: { $0.name == name }) {
      return try historyAttributes(
        history.inode(for: .version(match.record.id), record: match.record))
    }
    if listing.folders.contains(name) {
      return try historyAttributes(history.inode(for: .folder(prefix.appending(name))))
    }
    throw .noSuchFileOrDirectory
  }

  func historyDirectoryListing(_ inode: UInt64) throws(Errno) -> [(
    name: [UInt8], inode: UInt64, type: UInt32
  )] {
    let prefix = try historyFolderPath(inode)
    let listing = historyListing(prefix)
    refreshModes([prefix] + listing.folders.map { prefix.appending($0) })
    let up: UInt64 =
      prefix.components.count <= 1
      ? (prefix.isRoot ? Self.rootInode : Self.historyInode)
      : history.inode(for: .folder(prefix.parent))
    var entries: [(name: [UInt8], inode: UInt64, type: UInt32)] = [
      (Array(".".utf8), inode, UInt32(S_IFDIR)), (Array("..".utf8), up, UInt32(S_IFDIR)),
    ]
    for folder in listing.folders {
      entries.append(
        (folder, history.inode(for: .folder(prefix.appending(folder))), UInt32(S_IFDIR)))
    }
    for version in listing.versions {
      entries.append(
        (
          version.name, history.inode(for: .version(version.record.id), record: version.record),
          UInt32(S_IFREG)
        ))
    }
    return entries
  }

  /// Opens an earlier version for reading, fetching its content from the hub when this
  /// device does not hold it.
  func historyOpen(_ inode: UInt64, flags: Int32) throws(Errno) -> OpenFile {
    guard case .version? = history.key(inode), let record = history.record(inode) else {
      throw .isDirectory
    }
    if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 { throw .readOnlyFileSystem }
    guard let fd = engine?.contentFileFetching(record)?.detachDescriptor() else {
      throw .ioError
    }
    try admit(fd)
    lock.withLock { openFiles[UInt64(fd)] = (inode, false) }
    return OpenFile(handle: UInt64(fd), descriptor: fd)
  }

  func historyExtendedAttributes(_ inode: UInt64) -> [[UInt8]: [UInt8]] {
    guard let record = history.record(inode) else { return [:] }
    return [
      Array("user.docsync.device".utf8): Array(record.deviceName.utf8),
      Array("user.docsync.version".utf8): Array(record.id.hex.utf8),
      Array("user.docsync.mtime".utf8): Array(Self.isoTime(record.modified.wallMilliseconds).utf8),
    ]
  }
}
