import FuseLowLevel
import Glibc
import Synchronization
import SystemPackage

/// A small in-memory file system that exercises the session on a real kernel: names and
/// attributes in memory, file contents in unlinked temporary files so that reads go back as
/// file ranges (the fd reply path that docsync's working files use).
final class MemoryFileSystem: LowLevelFileSystem {
  private struct Node {
    var attributes: stat
    var children: [[UInt8]: UInt64] = [:]
    var target: [UInt8] = []
    var extendedAttributes: [[UInt8]: [UInt8]] = [:]
    var lookups: UInt64 = 0
    var content: Int32 = -1
  }

  private struct State: @unchecked Sendable {
    var nodes: [UInt64: Node] = [:]
    var nextInode: UInt64 = 2
  }

  private let state: Mutex<State>
  private let scratch: String
  private let timeout = 1.0

  init(scratch: String) {
    self.scratch = scratch
    var root = stat()
    root.st_ino = 1
    root.st_mode = S_IFDIR | 0o755
    root.st_nlink = 2
    root.st_uid = getuid()
    root.st_gid = getgid()
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    root.st_atim = now
    root.st_mtim = now
    root.st_ctim = now
    var state = State()
    state.nodes[1] = Node(attributes: root, lookups: 1)
    self.state = Mutex(state)
  }

  // MARK: helpers

  private func entry(_ attributes: stat) -> Entry {
    Entry(attributes: attributes, attributeTimeout: timeout, entryTimeout: timeout)
  }

  private static func now() -> timespec {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return now
  }

  private func makeContent() -> Result<Int32, Errno> {
    var template = Array("\(scratch)/memoryfs-XXXXXX".utf8CString)
    let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    if descriptor < 0 { return .failure(.fromCErrno()) }
    template.withUnsafeBufferPointer { _ = Glibc.unlink($0.baseAddress!) }
    return .success(descriptor)
  }

  /// Adds a node named `name` in `parent`, counting the lookup the reply gives the kernel.
  private func add(
    parent: UInt64, name: [UInt8], mode: mode_t, context: RequestContext, target: [UInt8] = []
  ) -> Result<Entry, Errno> {
    var content: Int32 = -1
    if mode & S_IFMT == S_IFREG {
      switch makeContent() {
      case .success(let descriptor): content = descriptor
      case .failure(let error): return .failure(error)
      }
    }
    let result: Result<Entry, Errno> = state.withLock { state in
      guard var directory = state.nodes[parent] else { return .failure(.noSuchFileOrDirectory) }
      guard directory.children[name] == nil else { return .failure(.fileExists) }
      let inode = state.nextInode
      state.nextInode += 1
      var attributes = stat()
      attributes.st_ino = ino_t(inode)
      attributes.st_mode = mode
      attributes.st_nlink = mode & S_IFMT == S_IFDIR ? 2 : 1
      attributes.st_uid = context.uid
      attributes.st_gid = context.gid
      attributes.st_size = off_t(target.count)
      attributes.st_blksize = 4096
      let now = Self.now()
      attributes.st_atim = now
      attributes.st_mtim = now
      attributes.st_ctim = now
      state.nodes[inode] = Node(
        attributes: attributes, target: target, lookups: 1, content: content)
      directory.children[name] = inode
      if mode & S_IFMT == S_IFDIR { directory.attributes.st_nlink += 1 }
      directory.attributes.st_mtim = now
      directory.attributes.st_ctim = now
      state.nodes[parent] = directory
      return .success(entry(attributes))
    }
    if case .failure = result, content >= 0 { close(content) }
    return result
  }

  /// Drops one link to `inode`, freeing it when the kernel holds no lookup either.
  private static func unlinkNode(_ inode: UInt64, in state: inout State) {
    guard var node = state.nodes[inode] else { return }
    node.attributes.st_nlink -= node.attributes.st_mode & S_IFMT == S_IFDIR ? 2 : 1
    node.attributes.st_ctim = now()
    state.nodes[inode] = node
    freeIfUnused(inode, in: &state)
  }

  private static func freeIfUnused(_ inode: UInt64, in state: inout State) {
    guard let node = state.nodes[inode], node.lookups == 0, node.attributes.st_nlink == 0 else {
      return
    }
    if node.content >= 0 { close(node.content) }
    state.nodes[inode] = nil
  }

  // MARK: LowLevelFileSystem

  func lookup(parent: UInt64, name: [UInt8], context: RequestContext) -> Result<Entry, Errno> {
    state.withLock { state in
      guard let directory = state.nodes[parent] else { return .failure(.noSuchFileOrDirectory) }
      guard let inode = directory.children[name], var node = state.nodes[inode] else {
        return .failure(.noSuchFileOrDirectory)
      }
      node.lookups += 1
      state.nodes[inode] = node
      return .success(entry(node.attributes))
    }
  }

  func forget(inode: UInt64, count: UInt64) {
    state.withLock { state in
      guard var node = state.nodes[inode] else { return }
      node.lookups -= min(count, node.lookups)
      state.nodes[inode] = node
      Self.freeIfUnused(inode, in: &state)
    }
  }

  func getAttributes(inode: UInt64, handle: UInt64?, context: RequestContext) -> Result<
    AttributeReply, Errno
  > {
    state.withLock { state in
      guard let node = state.nodes[inode] else { return .failure(.noSuchFileOrDirectory) }
      return .success(AttributeReply(attributes: node.attributes, timeout: timeout))
    }
  }

  func setAttributes(inode: UInt64, changes: AttributeChanges, context: RequestContext) -> Result<
    AttributeReply, Errno
  > {
    state.withLock { state in
      guard var node = state.nodes[inode] else { return .failure(.noSuchFileOrDirectory) }
      let now = Self.now()
      if let mode = changes.mode {
        node.attributes.st_mode = node.attributes.st_mode & S_IFMT | mode & ~S_IFMT
      }
      if let uid = changes.uid { node.attributes.st_uid = uid }
      if let gid = changes.gid { node.attributes.st_gid = gid }
      if let size = changes.size {
        guard node.content >= 0 else { return .failure(.isDirectory) }
        if ftruncate(node.content, size) != 0 { return .failure(.fromCErrno()) }
        node.attributes.st_size = size
        node.attributes.st_mtim = now
      }
      switch changes.accessTime {
      case .now: node.attributes.st_atim = now
      case .time(let time): node.attributes.st_atim = time
      case nil: break
      }
      switch changes.modificationTime {
      case .now: node.attributes.st_mtim = now
      case .time(let time): node.attributes.st_mtim = time
      case nil: break
      }
      node.attributes.st_ctim = now
      state.nodes[inode] = node
      return .success(AttributeReply(attributes: node.attributes, timeout: timeout))
    }
  }

  func readLink(inode: UInt64, context: RequestContext) -> Result<[UInt8], Errno> {
    state.withLock { state in
      guard let node = state.nodes[inode] else { return .failure(.noSuchFileOrDirectory) }
      guard node.attributes.st_mode & S_IFMT == S_IFLNK else { return .failure(.invalidArgument) }
      return .success(node.target)
    }
  }

  func makeNode(
    parent: UInt64, name: [UInt8], mode: mode_t, device: dev_t, context: RequestContext
  ) -> Result<Entry, Errno> {
    guard mode & S_IFMT == S_IFREG else { return .failure(.notPermitted) }
    return add(parent: parent, name: name, mode: mode & ~context.umask, context: context)
  }

  func makeDirectory(parent: UInt64, name: [UInt8], mode: mode_t, context: RequestContext)
    -> Result<Entry, Errno>
  {
    add(
      parent: parent, name: name, mode: S_IFDIR | mode & ~context.umask & 0o7777, context: context)
  }

  func unlink(parent: UInt64, name: [UInt8], context: RequestContext) -> Result<Void, Errno> {
    remove(parent: parent, name: name, directory: false)
  }

  func removeDirectory(parent: UInt64, name: [UInt8], context: RequestContext) -> Result<
    Void, Errno
  > {
    remove(parent: parent, name: name, directory: true)
  }

  private func remove(parent: UInt64, name: [UInt8], directory: Bool) -> Result<Void, Errno> {
    state.withLock { state in
      guard var parentNode = state.nodes[parent], let inode = parentNode.children[name],
        let node = state.nodes[inode]
      else { return .failure(.noSuchFileOrDirectory) }
      let isDirectory = node.attributes.st_mode & S_IFMT == S_IFDIR
      if directory && !isDirectory { return .failure(.notDirectory) }
      if !directory && isDirectory { return .failure(.isDirectory) }
      if isDirectory && !node.children.isEmpty { return .failure(.directoryNotEmpty) }
      parentNode.children[name] = nil
      if isDirectory { parentNode.attributes.st_nlink -= 1 }
      parentNode.attributes.st_mtim = Self.now()
      state.nodes[parent] = parentNode
      Self.unlinkNode(inode, in: &state)
      return .success(())
    }
  }

  func symlink(target: [UInt8], parent: UInt64, name: [UInt8], context: RequestContext) -> Result<
    Entry, Errno
  > {
    add(parent: parent, name: name, mode: S_IFLNK | 0o777, context: context, target: target)
  }

  func rename(
    parent: UInt64, name: [UInt8], newParent: UInt64, newName: [UInt8], flags: RenameFlags,
    context: RequestContext
  ) -> Result<Void, Errno> {
    state.withLock { state in
      guard let inode = state.nodes[parent]?.children[name], state.nodes[newParent] != nil else {
        return .failure(.noSuchFileOrDirectory)
      }
      let replaced = state.nodes[newParent]!.children[newName]
      if flags.contains(.noReplace), replaced != nil { return .failure(.fileExists) }
      if flags.contains(.exchange) {
        guard let replaced else { return .failure(.noSuchFileOrDirectory) }
        state.nodes[parent]!.children[name] = replaced
        state.nodes[newParent]!.children[newName] = inode
        return .success(())
      }
      if replaced == inode { return .success(()) }
      if let replaced, let old = state.nodes[replaced] {
        if old.attributes.st_mode & S_IFMT == S_IFDIR {
          if !old.children.isEmpty { return .failure(.directoryNotEmpty) }
          state.nodes[newParent]!.attributes.st_nlink -= 1
        }
        Self.unlinkNode(replaced, in: &state)
      }
      state.nodes[parent]!.children[name] = nil
      state.nodes[newParent]!.children[newName] = inode
      if state.nodes[inode]!.attributes.st_mode & S_IFMT == S_IFDIR && parent != newParent {
        state.nodes[parent]!.attributes.st_nlink -= 1
        state.nodes[newParent]!.attributes.st_nlink += 1
      }
      state.nodes[inode]!.attributes.st_ctim = Self.now()
      return .success(())
    }
  }

  func link(inode: UInt64, newParent: UInt64, newName: [UInt8], context: RequestContext) -> Result<
    Entry, Errno
  > {
    state.withLock { state in
      guard var node = state.nodes[inode], state.nodes[newParent] != nil else {
        return .failure(.noSuchFileOrDirectory)
      }
      if state.nodes[newParent]!.children[newName] != nil { return .failure(.fileExists) }
      state.nodes[newParent]!.children[newName] = inode
      node.attributes.st_nlink += 1
      node.lookups += 1
      state.nodes[inode] = node
      return .success(entry(node.attributes))
    }
  }

  func open(inode: UInt64, flags: Int32, context: RequestContext) -> Result<OpenReply, Errno> {
    state.withLock { state in
      guard let node = state.nodes[inode] else { return .failure(.noSuchFileOrDirectory) }
      return .success(OpenReply(handle: UInt64(node.content), keepCache: true))
    }
  }

  func read(inode: UInt64, handle: UInt64, offset: Int64, size: Int, context: RequestContext)
    -> Result<ReadData, Errno>
  {
    .success(.file(descriptor: Int32(handle), offset: offset, count: size))
  }

  func write(
    inode: UInt64, handle: UInt64, data: UnsafeRawBufferPointer, offset: Int64,
    context: RequestContext
  ) -> Result<Int, Errno> {
    let written = pwrite(Int32(handle), data.baseAddress, data.count, off_t(offset))
    if written < 0 { return .failure(.fromCErrno()) }
    state.withLock { state in
      guard var node = state.nodes[inode] else { return }
      node.attributes.st_size = max(node.attributes.st_size, off_t(offset) + written)
      node.attributes.st_mtim = Self.now()
      node.attributes.st_ctim = node.attributes.st_mtim
      state.nodes[inode] = node
    }
    return .success(written)
  }

  func flush(inode: UInt64, handle: UInt64, context: RequestContext) -> Result<Void, Errno> {
    .success(())
  }

  func release(inode: UInt64, handle: UInt64, flags: Int32, context: RequestContext) -> Result<
    Void, Errno
  > {
    .success(())
  }

  func fsync(inode: UInt64, handle: UInt64, dataOnly: Bool, context: RequestContext) -> Result<
    Void, Errno
  > {
    .success(())
  }

  func openDirectory(inode: UInt64, flags: Int32, context: RequestContext) -> Result<
    OpenReply, Errno
  > {
    state.withLock { state in
      guard state.nodes[inode] != nil else { return .failure(.noSuchFileOrDirectory) }
      return .success(OpenReply(handle: 0))
    }
  }

  func readDirectory(
    inode: UInt64, handle: UInt64, offset: Int64, plus: Bool, context: RequestContext,
    emit: (DirectoryEntry) -> Bool
  ) -> Result<Void, Errno> {
    // A snapshot, so that `emit` runs without the lock.
    let listing: [([UInt8], stat)]? = state.withLock { state in
      guard let directory = state.nodes[inode] else { return nil }
      var listing: [([UInt8], stat)] = [
        (Array(".".utf8), directory.attributes), (Array("..".utf8), directory.attributes),
      ]
      for (name, child) in directory.children.sorted(by: {
        $0.key.lexicographicallyPrecedes($1.key)
      }) {
        if let node = state.nodes[child] { listing.append((name, node.attributes)) }
      }
      return listing
    }
    guard let listing else { return .failure(.noSuchFileOrDirectory) }
    var index = Int(offset)
    while index < listing.count {
      let (name, attributes) = listing[index]
      let isDot = name == Array(".".utf8) || name == Array("..".utf8)
      let full = plus && !isDot ? entry(attributes) : nil
      let accepted = emit(
        DirectoryEntry(
          name: name, attributes: attributes, nextOffset: Int64(index + 1), entry: full))
      if !accepted { break }
      if full != nil {
        state.withLock { state in state.nodes[UInt64(attributes.st_ino)]?.lookups += 1 }
      }
      index += 1
    }
    return .success(())
  }

  func releaseDirectory(inode: UInt64, handle: UInt64, context: RequestContext) -> Result<
    Void, Errno
  > {
    .success(())
  }

  func fsyncDirectory(inode: UInt64, handle: UInt64, dataOnly: Bool, context: RequestContext)
    -> Result<Void, Errno>
  {
    .success(())
  }

  func statfs(inode: UInt64, context: RequestContext) -> Result<statvfs, Errno> {
    var statistics = statvfs()
    statistics.f_bsize = 4096
    statistics.f_frsize = 4096
    statistics.f_blocks = 1 << 20
    statistics.f_bfree = 1 << 19
    statistics.f_bavail = 1 << 19
    statistics.f_files = 1 << 20
    statistics.f_ffree = 1 << 19
    statistics.f_namemax = 255
    return .success(statistics)
  }

  func setExtendedAttribute(
    inode: UInt64, name: [UInt8], value: UnsafeRawBufferPointer, flags: Int32,
    context: RequestContext
  ) -> Result<Void, Errno> {
    // XATTR_CREATE and XATTR_REPLACE from <sys/xattr.h>, which Glibc's module does not include.
    let create: Int32 = 1
    let replace: Int32 = 2
    return state.withLock { state in
      guard var node = state.nodes[inode] else { return .failure(.noSuchFileOrDirectory) }
      let exists = node.extendedAttributes[name] != nil
      if flags & create != 0 && exists { return .failure(.fileExists) }
      if flags & replace != 0 && !exists { return .failure(.noData) }
      node.extendedAttributes[name] = Array(value)
      state.nodes[inode] = node
      return .success(())
    }
  }

  func getExtendedAttribute(inode: UInt64, name: [UInt8], context: RequestContext) -> Result<
    [UInt8], Errno
  > {
    state.withLock { state in
      guard let node = state.nodes[inode] else { return .failure(.noSuchFileOrDirectory) }
      guard let value = node.extendedAttributes[name] else { return .failure(.noData) }
      return .success(value)
    }
  }

  func listExtendedAttributes(inode: UInt64, context: RequestContext) -> Result<[[UInt8]], Errno> {
    state.withLock { state in
      guard let node = state.nodes[inode] else { return .failure(.noSuchFileOrDirectory) }
      return .success(node.extendedAttributes.keys.sorted { $0.lexicographicallyPrecedes($1) })
    }
  }

  func removeExtendedAttribute(inode: UInt64, name: [UInt8], context: RequestContext) -> Result<
    Void, Errno
  > {
    state.withLock { state in
      guard state.nodes[inode] != nil else { return .failure(.noSuchFileOrDirectory) }
      guard state.nodes[inode]!.extendedAttributes.removeValue(forKey: name) != nil else {
        return .failure(.noData)
      }
      return .success(())
    }
  }

  func access(inode: UInt64, mask: Int32, context: RequestContext) -> Result<Void, Errno> {
    .success(())
  }

  func create(
    parent: UInt64, name: [UInt8], mode: mode_t, flags: Int32, context: RequestContext
  ) -> Result<(Entry, OpenReply), Errno> {
    add(
      parent: parent, name: name, mode: S_IFREG | mode & ~context.umask & 0o7777, context: context
    )
    .flatMap { entry in
      let inode = UInt64(entry.attributes.st_ino)
      let content = state.withLock { $0.nodes[inode]?.content ?? -1 }
      return .success((entry, OpenReply(handle: UInt64(content), keepCache: true)))
    }
  }

  func destroy() {}
}
