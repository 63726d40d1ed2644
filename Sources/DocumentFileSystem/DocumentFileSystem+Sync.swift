import DocumentModel
import Glibc
import LocalStore
import SyncEngine
import SystemPackage

/// A change the kernel must forget because sync made it behind the kernel's back.
public enum KernelInvalidation: Sendable, Equatable {
  /// Attributes and cached pages of an inode.
  case inode(UInt64)
  /// A name in a folder (positive or negative dentry).
  case entry(parent: UInt64, name: [UInt8])
  /// A name that is gone, and the inode it named.
  case delete(parent: UInt64, child: UInt64, name: [UInt8])
}

/// Invalidations on their way to the kernel; a leaf lock, so the file system can queue them
/// while holding its own, and a thread that holds no lock sends them.
public final class InvalidationQueue: @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  private var condition = pthread_cond_t()
  private var pending: [KernelInvalidation] = []
  private var closed = false
  private var posted: UInt64 = 0
  private var delivered: UInt64 = 0
  private var taken: UInt64 = 0

  public init() {
    pthread_mutex_init(&mutex, nil)
    pthread_cond_init(&condition, nil)
  }

  func post(_ invalidation: KernelInvalidation) {
    pthread_mutex_lock(&mutex)
    pending.append(invalidation)
    posted += 1
    pthread_cond_broadcast(&condition)
    pthread_mutex_unlock(&mutex)
  }

  /// Waits until everything posted so far has been delivered (or the queue is closed).
  public func waitUntilDelivered() {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    let target = posted
    while delivered < target && !closed { pthread_cond_wait(&condition, &mutex) }
  }

  /// The sender reports that the last batch from `next()` reached the kernel.
  public func markDelivered() {
    pthread_mutex_lock(&mutex)
    delivered = taken
    pthread_cond_broadcast(&condition)
    pthread_mutex_unlock(&mutex)
  }

  /// Waits for invalidations; empty once the queue is closed.
  public func next() -> [KernelInvalidation] {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    while pending.isEmpty && !closed { pthread_cond_wait(&condition, &mutex) }
    let batch = pending
    taken += UInt64(batch.count)
    pending = []
    return batch
  }

  public func close() {
    pthread_mutex_lock(&mutex)
    closed = true
    pthread_cond_broadcast(&condition)
    pthread_mutex_unlock(&mutex)
  }
}

extension DocumentFileSystem {
  enum NoteKind { case create, write, remove }

  /// The library path of a folder, walking up its names; nil for a removed folder.
  func path(of inode: UInt64) -> DocumentPath? {
    var components: [[UInt8]] = []
    var current = inode
    while current != Self.rootInode {
      guard let node = nodes[current], let name = node.names.first else { return nil }
      components.append(name.name)
      current = name.parent
    }
    return DocumentPath(components: components.reversed())
  }

  func path(parent: UInt64, name: [UInt8]) -> DocumentPath? {
    path(of: parent)?.appending(name)
  }

  /// Tells the sync engine about a local change. Called with the tree lock held; the change
  /// log is a leaf lock.
  func note(_ kind: NoteKind, parent: UInt64, name: [UInt8]) {
    guard let engine, !suppressNotes, let path = path(parent: parent, name: name) else { return }
    switch kind {
    case .create: engine.changeLog.note(.create(path))
    case .write: engine.changeLog.note(.write(path))
    case .remove: engine.changeLog.note(.remove(path))
    }
  }

  /// A change of content or attributes to every name of an inode.
  func noteWrite(_ node: Node) {
    for name in node.names { note(.write, parent: name.parent, name: name.name) }
  }

  func node(at path: DocumentPath) -> Node? {
    var current = nodes[Self.rootInode]
    for component in path.components {
      guard let folder = current, folder.isDirectory, let inode = folder.children[component] else {
        return nil
      }
      current = nodes[inode]
    }
    return current
  }

  func localEntry(_ node: Node) -> LocalEntry {
    if node.isDirectory { return .directory }
    if let target = node.target, node.isSymlink {
      return .symlink(target: target, modificationTime: node.modificationTime)
    }
    guard node.isRegular else { return .special }
    guard let info = store.content.workingFileStatus(node.inode) else { return .special }
    return .file(
      inode: node.inode, size: Int64(info.st_size), modificationTime: nanoseconds(info.st_mtim),
      changeTime: nanoseconds(info.st_ctim), executable: node.mode & 0o100 != 0)
  }
}

extension DocumentFileSystem: LocalTree {
  public func entry(at path: DocumentPath) -> LocalEntry? {
    lock.withLock { node(at: path).map(localEntry) }
  }

  public func forEachEntry(under path: DocumentPath, _ body: (DocumentPath, LocalEntry) -> Void) {
    lock.withLock {
      guard let start = node(at: path) else { return }
      var pending: [(DocumentPath, Node)] = [(path, start)]
      while let (current, node) = pending.popLast() {
        if !current.isRoot { body(current, localEntry(node)) }
        for (name, inode) in node.children {
          if let child = nodes[inode] { pending.append((current.appending(name), child)) }
        }
      }
    }
  }

  public func changeTimeBeforeRenames(at path: DocumentPath, changeTime: Int64) -> Int64? {
    lock.withLock {
      guard let times = node(at: path)?.renameChangeTimes, times.after == changeTime else {
        return nil
      }
      return times.before
    }
  }

  public func hasOpenWriter(at path: DocumentPath) -> Bool {
    lock.withLock { node(at: path).map { $0.writers - $0.closedWriters > 0 } ?? false }
  }

  public func apply(_ change: RemoteChange, expected: LocalEntry?) -> ApplyOutcome {
    // Whether the new content only appends to a file that is open for reading is read from
    // both files before the lock: no copy or whole-file read under it.
    var extendsOpenFile = false
    if readersFollowAppends.load(ordering: .relaxed),
      case .file(let path, let incoming, _) = change,
      let open = lock.withLock({ readOnlyOpenFile(at: path) })
    {
      extendsOpenFile = store.content.incomingFile(incoming, startsWith: open)
    }
    return lock.withLock {
      applyLocked(change, expected: expected, extendsOpenFile: extendsOpenFile)
    }
  }

  /// The working file of the file at `path` when it is open only for reading (and has one
  /// name): what a remote version that appends to it may land in.
  private func readOnlyOpenFile(at path: DocumentPath) -> UInt64? {
    guard let node = node(at: path), node.isRegular, node.openCount > 0, node.writers == 0,
      node.linkCount == 1
    else { return nil }
    return node.inode
  }

  /// The part of `apply` under the tree lock: only checks, renames and the tree's records;
  /// a file's content was written and made durable before (``ContentStore/createIncomingFile()``),
  /// and the engine fsyncs the folders after a batch of renames.
  private func applyLocked(_ change: RemoteChange, expected: LocalEntry?, extendsOpenFile: Bool)
    -> ApplyOutcome
  {
    let path = change.path
    guard !path.isRoot, !Self.isReserved(parent: Self.rootInode, name: path.components[0])
    else { return .skipped }
    let existing = node(at: path)
    if existing.map(localEntry) != expected { return .skipped }
    if let existing, existing.writers > 0 { return .skipped }
    do throws(Errno) {
      switch change {
      case .remove:
        guard let existing else { return .applied(nil) }
        if existing.isDirectory && !existing.children.isEmpty {
          return .applied(localEntry(existing))
        }
        try removeForSync(existing, at: path)
        return .applied(nil)
      case .directory:
        if let existing, existing.isDirectory { return .applied(.directory) }
        let folder = try folderForSync(path.parent)
        if let existing { try removeForSync(existing, at: path) }
        let record = newRecord(in: folder, mode: UInt32(S_IFDIR) | folderMode, caller: owner)
        try insertForSync(record, name: path.name, in: folder)
        return .applied(.directory)
      case .symlink(_, let target, let modificationTime):
        let folder = try folderForSync(path.parent)
        if let existing {
          if existing.isDirectory && !existing.children.isEmpty { return .skipped }
          try removeForSync(existing, at: path)
        }
        var record = newRecord(in: folder, mode: UInt32(S_IFLNK) | 0o777, caller: owner)
        record.target = target
        record.modificationTime = modificationTime
        try insertForSync(record, name: path.name, in: folder)
        return .applied(.symlink(target: target, modificationTime: modificationTime))
      case .file(_, let incoming, let executable):
        let folder = try folderForSync(path.parent)
        var target = existing
        if let current = existing, !current.isRegular {
          if current.isDirectory && !current.children.isEmpty { return .skipped }
          try removeForSync(current, at: path)
          target = nil
        }
        let node: Node
        var unchangedContent = false
        if let target, target.linkCount == 1,
          target.openCount == 0 || (extendsOpenFile && target.writers == 0)
        {
          // Nobody has the file open: the new content takes its working file's name, and the
          // inode (whose number git compares) stays. The kernel forgets its cached pages.
          // Readers of a file that the new version only extends read on into the new end, as
          // after a local append (`tail -f`): their descriptors move to the new working file;
          // the bytes they read before are the same in both.
          unchangedContent = sameSizeAndTime(incoming, as: target.inode)
          try renameWorkingFile(incoming, to: target.inode)
          if target.openCount > 0 { repointReaders(of: target.inode) }
          node = target
          invalidations.post(.inode(node.inode))
        } else if let target {
          // Open files are never rewritten: as when a file is renamed over another on a local
          // disk, the path gets a new inode with the new content, and whoever has the old one
          // open (a descriptor here, or the kernel's backing file under passthrough, which
          // cannot be re-pointed) keeps reading the old content until the last close. A file
          // with other hard links keeps them: each name syncs as a document of its own.
          var record = newRecord(
            in: folder, mode: target.mode, caller: Caller(uid: target.uid, gid: target.gid))
          record.gid = target.gid
          try renameWorkingFile(incoming, to: record.inode)
          do throws(Errno) {
            try removeForSync(target, at: path)
            node = try insertForSync(record, name: path.name, in: folder)
          } catch {
            store.content.discardNewWorkingFile(record.inode)
            throw error
          }
          if !target.extendedAttributes.isEmpty {
            node.extendedAttributes = target.extendedAttributes
            try persist(
              target.extendedAttributes.map {
                .putExtendedAttribute(
                  ExtendedAttributeRecord(inode: node.inode, name: $0.key, value: $0.value))
              })
          }
        } else {
          // A new file's working file has its content before the file gets its name, so a
          // crash leaves no named file half written.
          let record = newRecord(in: folder, mode: UInt32(S_IFREG) | fileMode, caller: owner)
          try renameWorkingFile(incoming, to: record.inode)
          do throws(Errno) {
            node = try insertForSync(record, name: path.name, in: folder)
          } catch {
            store.content.discardNewWorkingFile(record.inode)
            throw error
          }
        }
        let mode =
          executable ? node.mode | ((node.mode & 0o444) >> 2) : node.mode & ~UInt32(0o111)
        let modeChanged = mode != node.mode
        if modeChanged {
          node.mode = mode
          try persist([.putInode(node.record)])
        }
        if node === existing {
          // Content that did not change with a new mode is a chmod, nothing more.
          if !unchangedContent || !modeChanged { announce(.contentChanged, of: node, at: path) }
          if modeChanged { announce(.modeChanged(mode), of: node, at: path) }
        }
        return .applied(localEntry(node))
      }
    } catch {
      return .skipped
    }
  }

  /// Gives a working file on its way in (see ``ContentStore/createIncomingFile()``) the name of
  /// an inode's working file, replacing what had it.
  private func renameWorkingFile(_ incoming: String, to inode: UInt64) throws(Errno) {
    try store.content.installIncoming(incoming, as: inode)
  }

  public func flushKernelCaches() {
    invalidations.waitUntilDelivered()
    // The raising process's requests are served by the FUSE threads: a bounded wait, so that a
    // pool held up elsewhere can delay `docsync sync`, never stop it.
    announcements.waitUntilRaised(milliseconds: 2_000)
  }

  public func conflictsChanged(at paths: Set<DocumentPath>) {
    invalidations.post(.inode(Self.versionsInode))
    announcements.postConflicts(paths)
    versionsChanged()
  }

  /// The owner of what sync creates: the owner of the mount's root.
  var owner: Caller {
    let root = nodes[Self.rootInode]!
    return Caller(uid: root.uid, gid: root.gid)
  }

  /// The folder at `path`, made (with its parents) when missing.
  private func folderForSync(_ path: DocumentPath) throws(Errno) -> Node {
    var current = nodes[Self.rootInode]!
    var walked = DocumentPath.root
    for component in path.components {
      walked = walked.appending(component)
      if let inode = current.children[component], let child = nodes[inode] {
        if child.isDirectory {
          current = child
          continue
        }
        if child.isRegular || child.isSymlink { throw .notDirectory }
        try removeForSync(child, at: walked)
      }
      let record = newRecord(in: current, mode: UInt32(S_IFDIR) | folderMode, caller: owner)
      current = try insertForSync(record, name: component, in: current)
    }
    return current
  }

  @discardableResult
  private func insertForSync(_ record: InodeRecord, name: [UInt8], in folder: Node) throws(Errno)
    -> Node
  {
    suppressNotes = true  // not a local change: the engine made it
    defer { suppressNotes = false }
    let node = try insert(record, name: name, in: folder)
    node.lookups = 0
    announce(.created(Self.announcedKind(node)), of: node, named: name, in: folder)
    // A folder the kernel holds no reference to (a new device's whole tree, as sync makes it)
    // has no cached names or attributes to forget: two notifications per file of an initial
    // sync were two failing writes to /dev/fuse. Lookups are counted under this lock, so the
    // kernel cannot learn of the folder in between.
    if folder.lookups > 0 {
      invalidations.post(.entry(parent: folder.inode, name: name))
      invalidations.post(.inode(folder.inode))
    }
    return node
  }

  private func removeForSync(_ node: Node, at path: DocumentPath) throws(Errno) {
    guard let name = node.names.first(where: { self.path(of: $0.parent) == path.parent }),
      let folder = nodes[name.parent]
    else { return }
    let changes = detach(node, name: name.name, from: folder, now: currentTime())
    try persist(changes)
    reapIfUnused(node)
    // The raising process removes the name through the mount, which raises IN_DELETE, and tells
    // the kernel itself where that cannot be done.
    if !announce(.removed(Self.announcedKind(node)), of: node, named: name.name, in: folder) {
      invalidations.post(.delete(parent: folder.inode, child: node.inode, name: name.name))
    }
    invalidations.post(.inode(folder.inode))
  }

  static func announcedKind(_ node: Node) -> Announcement.EntryKind {
    node.isDirectory ? .directory : node.isSymlink ? .symlink : .file
  }

  /// Posts a change for the raising process; false when none runs (no mount, or not yet).
  @discardableResult
  func announce(_ kind: Announcement.Kind, of node: Node, named name: [UInt8], in folder: Node)
    -> Bool
  {
    guard announcements.isRunning, let parentPath = path(of: folder.inode) else { return false }
    announcements.post(
      Announcement(
        kind, parent: folder.inode, parentPath: parentPath, name: name, inode: node.inode))
    return true
  }

  private func announce(_ kind: Announcement.Kind, of node: Node, at path: DocumentPath) {
    guard let folder = self.node(at: path.parent) else { return }
    announce(kind, of: node, named: path.name, in: folder)
  }

  /// Whether the working file on its way in has the size and modification time of an inode's
  /// working file: a new version that changed only the mode.
  private func sameSizeAndTime(_ incoming: String, as inode: UInt64) -> Bool {
    guard let new = store.content.incomingStatus(incoming),
      let old = store.content.workingFileStatus(inode)
    else { return false }
    return new.st_size == old.st_size && new.st_mtim.tv_sec == old.st_mtim.tv_sec
      && new.st_mtim.tv_nsec == old.st_mtim.tv_nsec
  }

  /// Points every open descriptor of an inode at its working file as it is now named.
  private func repointReaders(of inode: UInt64) {
    for (handle, file) in openFiles where file.inode == inode {
      guard let fd = store.content.reopenWorkingFile(inode) else { continue }
      // dup2 swaps the file behind the handle's number at once: a read in flight reads one
      // or the other, and both hold what it may read.
      let target = descriptor(handle: handle)
      if dup2(fd, target) == target { _ = fcntl(target, F_SETFD, FD_CLOEXEC) }
      close(fd)
    }
  }
}
