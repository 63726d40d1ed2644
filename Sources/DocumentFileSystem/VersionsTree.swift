import DocumentModel
import Glibc
import SyncEngine
import SystemPackage

/// The virtual `.versions` tree: a read-only mirror of the paths of documents in conflict,
/// with one file per conflict version, named from the version alone.
///
/// Its inode numbers are handed out on first sight and kept for the life of the mount. It asks
/// the sync engine for conflicts and resolutions, so its methods never run under the tree
/// lock (the engine may call into the tree while it holds its own lock).
final class VersionsTree: @unchecked Sendable {
  /// What a virtual inode stands for.
  enum Key: Hashable {
    case folder(DocumentPath)
    case version(VersionID)
    /// `merged<ext>` or `base<ext>` of the document at the path.
    case view(DocumentPath, isBase: Bool)
  }

  /// Virtual inode numbers start here, far above any real one.
  static let firstInode: UInt64 = 1 << 56
  private var mutex = pthread_mutex_t()
  private let table = VirtualInodes<Key>(
    root: DocumentFileSystem.versionsInode, rootKey: .folder(.root), first: firstInode)
  private var views: [DocumentPath: MergeViews] = [:]
  /// When each cached document's conflict was seen gone (monotonic milliseconds).
  private var resolvedAt: [DocumentPath: UInt64] = [:]
  /// The modes of the real files and folders that `.versions` entries stand for, as last seen
  /// outside the tree lock: attributes are also asked for under it, where the tree cannot be.
  private var modes: [DocumentPath: UInt32] = [:]

  init() { pthread_mutex_init(&mutex, nil) }

  func withLock<T>(_ body: () -> T) -> T {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return body()
  }

  func inode(for key: Key, record: VersionRecord? = nil) -> UInt64 {
    table.inode(for: key, record: record)
  }

  func key(_ inode: UInt64) -> Key? { table.key(inode) }
  func knows(_ key: Key) -> Bool { table.knows(key) }
  func record(_ inode: UInt64) -> VersionRecord? { table.record(inode) }
  func cachedViews(_ path: DocumentPath) -> MergeViews? { withLock { views[path] } }
  func cache(_ made: MergeViews, for path: DocumentPath) {
    withLock {
      views[path] = made
      resolvedAt[path] = nil
    }
  }

  /// The document is no longer in conflict: its views linger for a few seconds, so that the
  /// `rm` of `.versions/<path>/*` or `rm -r`, which may remove the versions first (resolving
  /// the conflict), still finds `merged` and `base` to remove (which changes nothing).
  func viewsResolved(at path: DocumentPath, now: UInt64) {
    withLock {
      guard views[path] != nil else { return }
      if let since = resolvedAt[path] {
        if now > since + Self.lingerMilliseconds {
          views[path] = nil
          resolvedAt[path] = nil
        }
      } else {
        resolvedAt[path] = now
      }
    }
  }

  static let lingerMilliseconds: UInt64 = 10_000
  func mode(of path: DocumentPath) -> UInt32? { withLock { modes[path] } }
  func remember(_ seen: [DocumentPath: UInt32?]) {
    withLock { for (path, mode) in seen { modes[path] = mode } }
  }

  /// The entries of the virtual folder for `prefix`: subfolders toward deeper conflicts, and
  /// the versions of the document at `prefix` itself.
  static func listing(_ prefix: DocumentPath, conflicts: [DocumentPath: [VersionRecord]]) -> (
    folders: Set<[UInt8]>, versions: [(name: [UInt8], record: VersionRecord)]
  ) {
    var folders: Set<[UInt8]> = []
    for path in conflicts.keys
    where path.components.count > prefix.components.count && path.isEqualOrDescendant(of: prefix) {
      folders.insert(path.components[prefix.components.count])
    }
    let versions = (conflicts[prefix] ?? []).map { (VersionsName.name(for: $0), $0) }
    return (folders, versions)
  }
}

extension DocumentFileSystem {
  /// The names of the views in `.versions/<path>/` of the document at `path`: `merged<ext>`,
  /// then `base<ext>` when history has an ancestor; empty when it has none (not in conflict,
  /// not text, or some content not here yet). For `docsync versions`.
  public func mergeViewNames(of path: DocumentPath) -> [(name: [UInt8], isBase: Bool)] {
    guard let name = path.components.last, let views = mergeViews(at: path) else { return [] }
    return views.names(for: name)
  }

  /// Whether an inode belongs to the virtual `.versions` or `.history` tree.
  public static func isVirtual(_ inode: UInt64) -> Bool {
    inode == versionsInode || inode == historyInode || inode >= VersionsTree.firstInode
  }

  func versionsChanged() {}

  /// A resolution that a person's request in `.versions` asks for: what it removes there is
  /// theirs, raised by the kernel already, and not announced again (``AnnouncementQueue``).
  private func resolveLocally(_ resolution: Resolution) {
    _ = announcements.resolvingLocally { engine?.resolve(resolution) }
  }

  private func conflicts() -> [DocumentPath: [VersionRecord]] { engine?.conflicts() ?? [:] }

  private func folderPath(_ inode: UInt64) throws(Errno) -> DocumentPath {
    guard case .folder(let path)? = versions.key(inode) else {
      throw versions.key(inode) == nil ? .noSuchFileOrDirectory : .notDirectory
    }
    return path
  }

  /// Notes the modes of the real paths that `.versions` entries at `paths` stand for. Called
  /// without the tree lock.
  func refreshModes(_ paths: [DocumentPath]) {
    let seen = lock.withLock {
      Dictionary(paths.map { ($0, node(at: $0)?.mode) }, uniquingKeysWith: { first, _ in first })
    }
    versions.remember(seen)
  }

  /// `.versions` shows nobody what the real file's or folder's modes keep from them: a folder
  /// of `.versions` may be entered and read by whoever may enter and read what it mirrors (a
  /// document's folder by whoever may read the document), and only its owner writes it, which
  /// lets the owner `rm` and `mv` out; a version may be read by whoever may read its document.
  func virtualMode(of key: VersionsTree.Key) -> UInt32 {
    switch key {
    case .folder(let path):
      let mirrored = path.isRoot ? nodes[Self.rootInode]?.mode : versions.mode(of: path)
      guard let mirrored else { return UInt32(S_IFDIR) | folderMode }
      var bits = mirrored & 0o555
      if mirrored & UInt32(S_IFMT) != UInt32(S_IFDIR) {
        bits = (mirrored & 0o444) | ((mirrored & 0o444) >> 2)
      }
      return UInt32(S_IFDIR) | bits | 0o200
    case .version:
      return UInt32(S_IFREG) | (0o444 & ~creationMask)
    case .view(let path, _):
      return versionMode(of: path)
    }
  }

  /// A version's mode: read-only, readable by whoever may read its document.
  func versionMode(of document: DocumentPath) -> UInt32 {
    guard let mirrored = versions.mode(of: document), mirrored & UInt32(S_IFMT) == UInt32(S_IFREG)
    else { return UInt32(S_IFREG) | (0o444 & ~creationMask) }
    return UInt32(S_IFREG) | (mirrored & 0o444)
  }

  func virtualAttributes(_ inode: UInt64) throws(Errno) -> stat {
    if HistoryTree.owns(inode) { return try historyAttributes(inode) }
    var result = versionsAttributes()
    result.st_ino = UInt(inode)
    switch versions.key(inode) {
    case .folder(let path)?:
      result.st_mode = virtualMode(of: .folder(path))
      return result
    case .view(let path, let isBase)?:
      // From the cache only: this runs under the tree lock, where the engine must not be asked.
      guard let views = versions.cachedViews(path), let bytes = isBase ? views.base : views.merged
      else { throw .noSuchFileOrDirectory }
      result.st_mode = versionMode(of: path)
      result.st_nlink = 1
      setVirtualFile(&result, size: UInt64(bytes.count), modified: views.modified)
      return result
    case .version?:
      guard let record = versions.record(inode) else { throw .noSuchFileOrDirectory }
      // Versions are immutable: nobody may write them.
      result.st_mode = versionMode(of: record.path)
      result.st_nlink = 1
      setVirtualFile(&result, size: record.content.size ?? 0, modified: record.modified)
      return result
    case nil:
      throw .noSuchFileOrDirectory
    }
  }

  func virtualLookup(parent: UInt64, name: [UInt8]) throws(Errno) -> stat {
    if HistoryTree.owns(parent) { return try historyLookup(parent: parent, name: name) }
    try Self.validate(name: name)
    let prefix = try folderPath(parent)
    refreshModes(name == Array(".".utf8) ? [prefix] : [prefix, prefix.appending(name)])
    if name == Array(".".utf8) { return try virtualAttributes(parent) }
    let listing = VersionsTree.listing(prefix, conflicts: conflicts())
    if let match = listing.versions.first(where: { $0.name == name }) {
      return try virtualAttributes(
        versions.inode(for: .version(match.record.id), record: match.record))
    }
    if listing.folders.contains(name) {
      return try virtualAttributes(versions.inode(for: .folder(prefix.appending(name))))
    }
    let views = listing.versions.isEmpty ? lingeringViews(at: prefix) : mergeViews(at: prefix)
    if let views, let view = views.names(for: prefix.name).first(where: { $0.name == name }) {
      return try virtualAttributes(versions.inode(for: .view(prefix, isBase: view.isBase)))
    }
    throw .noSuchFileOrDirectory
  }

  /// The views of a document whose conflict ended a moment ago (see `viewsResolved`).
  private func lingeringViews(at path: DocumentPath) -> MergeViews? {
    guard versions.cachedViews(path) != nil else { return nil }
    versions.viewsResolved(at: path, now: Self.monotonicMilliseconds())
    return versions.cachedViews(path)
  }

  static func monotonicMilliseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(clamping: now.tv_sec) &* 1000 &+ UInt64(clamping: now.tv_nsec) / 1_000_000
  }

  func virtualListing(_ inode: UInt64) throws(Errno) -> [(
    name: [UInt8], inode: UInt64, type: UInt32
  )] {
    if HistoryTree.owns(inode) { return try historyDirectoryListing(inode) }
    let prefix = try folderPath(inode)
    let listing = VersionsTree.listing(prefix, conflicts: conflicts())
    refreshModes([prefix] + listing.folders.map { prefix.appending($0) })
    let up: UInt64 =
      prefix.components.count <= 1
      ? (prefix.isRoot ? Self.rootInode : Self.versionsInode)
      : versions.inode(for: .folder(prefix.parent))
    var entries: [(name: [UInt8], inode: UInt64, type: UInt32)] = [
      (Array(".".utf8), inode, UInt32(S_IFDIR)), (Array("..".utf8), up, UInt32(S_IFDIR)),
    ]
    for folder in listing.folders.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
      entries.append(
        (folder, versions.inode(for: .folder(prefix.appending(folder))), UInt32(S_IFDIR)))
    }
    for version in listing.versions {
      entries.append(
        (
          version.name, versions.inode(for: .version(version.record.id), record: version.record),
          UInt32(S_IFREG)
        ))
    }
    if !listing.versions.isEmpty, let views = mergeViews(at: prefix) {
      for view in views.names(for: prefix.name) {
        entries.append(
          (view.name, versions.inode(for: .view(prefix, isBase: view.isBase)), UInt32(S_IFREG)))
      }
    }
    return entries
  }

  func virtualOpen(_ inode: UInt64, flags: Int32) throws(Errno) -> OpenFile {
    if HistoryTree.owns(inode) { return try historyOpen(inode, flags: flags) }
    if case .view(let path, let isBase)? = versions.key(inode) {
      if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 { throw .readOnlyFileSystem }
      guard let views = mergeViews(at: path), let bytes = isBase ? views.base : views.merged
      else { throw .noSuchFileOrDirectory }
      let fd = try store.content.unnamedFile(holding: bytes)
      try admit(fd)
      lock.withLock { openFiles[UInt64(fd)] = (inode, false) }
      return OpenFile(handle: UInt64(fd), descriptor: fd)
    }
    guard case .version? = versions.key(inode), let record = versions.record(inode) else {
      throw .isDirectory
    }
    if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 { throw .readOnlyFileSystem }
    guard let fd = engine?.contentFile(of: record)?.detachDescriptor() else { throw .ioError }
    try admit(fd)
    lock.withLock { openFiles[UInt64(fd)] = (inode, false) }
    return OpenFile(handle: UInt64(fd), descriptor: fd)
  }

  /// `rm .versions/<path>/<v>`: discard that version.
  func virtualUnlink(parent: UInt64, name: [UInt8]) throws(Errno) {
    // Earlier versions go only by retention or `docsync forget`.
    if HistoryTree.owns(parent) { throw .readOnlyFileSystem }
    let prefix = try folderPath(parent)
    let listing = VersionsTree.listing(prefix, conflicts: conflicts())
    guard let match = listing.versions.first(where: { $0.name == name }) else {
      if listing.folders.contains(name) { throw .isDirectory }
      // `rm` of merged or base changes nothing (they go when the conflict does), and lets
      // `rm -r .versions/<path>` go on to keep the current version.
      if let views = listing.versions.isEmpty ? lingeringViews(at: prefix) : mergeViews(at: prefix),
        views.names(for: prefix.name).contains(where: { $0.name == name })
      {
        return
      }
      throw .noSuchFileOrDirectory
    }
    resolveLocally(.discard(match.record.id))
  }

  /// `rmdir` (the end of `rm -r`) in `.versions`: keep what is current for the document or
  /// for every document under the folder. A folder whose conflicts were resolved by the files
  /// removed just before is gone already; that is success, as `rm -r` expects.
  func virtualRemoveDirectory(parent: UInt64, name: [UInt8]) throws(Errno) {
    if parent == Self.rootInode || HistoryTree.owns(parent) { throw .readOnlyFileSystem }
    let prefix = try folderPath(parent)
    let path = prefix.appending(name)
    let open = conflicts().keys.filter { $0.isEqualOrDescendant(of: path) }
    if open.isEmpty {
      guard versions.knows(.folder(path)) else { throw .noSuchFileOrDirectory }
      return
    }
    resolveLocally(open == [path] ? .keepCurrent(path) : .keepCurrentUnder(path))
  }

  /// `mv .versions/<path>/<v> <path>`: choose that version. Any other destination is another
  /// file system as far as `mv` is concerned, so it copies and removes instead.
  func virtualRename(parent: UInt64, name: [UInt8], newParent: UInt64, newName: [UInt8])
    throws(Errno)
  {
    // `mv` out of `.history` copies instead (and then cannot remove the version).
    if HistoryTree.owns(parent) { throw .improperLink }
    let prefix = try folderPath(parent)
    let listing = VersionsTree.listing(prefix, conflicts: conflicts())
    guard let match = listing.versions.first(where: { $0.name == name }) else {
      throw .improperLink
    }
    let destination = lock.withLock { path(parent: newParent, name: newName) }
    guard destination == match.record.path else { throw .improperLink }
    resolveLocally(.choose(match.record.id))
  }

  /// The views of the document at `path`, made again when its heads changed; nil when it is
  /// not in conflict, a head is not text, or some content is not on this device yet.
  func mergeViews(at path: DocumentPath) -> MergeViews? {
    guard let engine, let heads = engine.mergeHeads(of: path) else {
      versions.viewsResolved(at: path, now: Self.monotonicMilliseconds())
      return nil
    }
    if let cached = versions.cachedViews(path), cached.key == heads.key { return cached }
    func text(_ record: VersionRecord) -> [UInt8]? {
      guard case .file(_, let size, _) = record.content, size <= ThreeWayMerge.maximumBytes,
        let bytes = engine.contentFile(of: record)?.readAll(), bytes.count <= Int(size),
        ThreeWayMerge.isMergeableText(bytes)
      else { return nil }
      return bytes
    }
    guard let current = text(heads.current) else { return nil }
    var others: [(VersionRecord, [UInt8])] = []
    for record in heads.others.sorted(by: {
      VersionsName.name(for: $0).lexicographicallyPrecedes(VersionsName.name(for: $1))
    }) {
      guard let bytes = text(record) else { return nil }
      others.append((record, bytes))
    }
    var base: [UInt8]?
    if let ancestor = heads.base {
      if case .file = ancestor.content {
        guard let bytes = text(ancestor) else { return nil }
        base = bytes
      } else {
        base = []  // the document did not exist there: everything is an addition
      }
    }
    func label(_ record: VersionRecord, _ what: String) -> String {
      "\(what) (\(record.deviceName), \(Self.isoTime(record.modified.wallMilliseconds)))"
    }
    var merged = current
    for (record, bytes) in others {
      let pairBase = heads.pairBases[record.id]
      var pairBaseBytes: [UInt8] = []
      if let pairBase, case .file = pairBase.content {
        guard let bytes = text(pairBase) else { return nil }
        pairBaseBytes = bytes
      }
      let result = ThreeWayMerge.merge(
        base: pairBaseBytes, current: merged, other: bytes,
        overlap: .markers(
          current: label(heads.current, "current"),
          base: pairBase.map { label($0, "base") } ?? "base (none in history)",
          other: label(record, VersionsName.string(for: record))))
      merged = result.bytes
    }
    let views = MergeViews(
      key: heads.key, merged: merged, base: base, modified: heads.current.modified)
    versions.cache(views, for: path)
    engine.noteMergedView(
      at: path, heads: [heads.current.id] + heads.others.map(\.id), content: merged)
    return views
  }

  func virtualExtendedAttributes(_ inode: UInt64) -> [[UInt8]: [UInt8]] {
    if HistoryTree.owns(inode) { return historyExtendedAttributes(inode) }
    guard let record = versions.record(inode) else { return [:] }
    return [
      Array("user.docsync.device".utf8): Array(record.deviceName.utf8),
      Array("user.docsync.version".utf8): Array(record.id.hex.utf8),
      Array("user.docsync.mtime".utf8): Array(Self.isoTime(record.modified.wallMilliseconds).utf8),
    ]
  }

  /// `2026-11-20T14:03:12.345Z`.
  static func isoTime(_ milliseconds: UInt64) -> String {
    var seconds = time_t(milliseconds / 1000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let fraction = String(milliseconds % 1000)
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
      + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))."
      + String(repeating: "0", count: 3 - fraction.count) + fraction + "Z"
  }
}
