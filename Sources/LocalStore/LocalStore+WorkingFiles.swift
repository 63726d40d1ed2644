import Glibc

extension LocalStore {
  /// The folder, under `workingFiles`, of working files on their way into the tree: content
  /// is written and fsynced there, outside every lock, and only renamed into place under one.
  public static let incomingFolder = "incoming"

  /// Makes the renames into and out of the folders that hold `names` (paths relative to
  /// `workingFiles`) durable: a rename is only in the folder until the folder is fsynced, and
  /// a power cut before that brings the old content back.
  public func syncFolders(of names: some Sequence<String>) {
    var folders: Set<String> = []
    for name in names {
      if let slash = name.lastIndex(of: "/") { folders.insert(String(name[..<slash])) }
    }
    syncFolders(folders)
  }

  /// Makes the names of these blobs (by hex hash) durable, as ``syncFolders(of:)`` does for
  /// working files: before a record that names one is made durable.
  public func syncBlobFolders(of hexes: some Sequence<String>) {
    // Relative to `workingFiles` (the state folder's `files`), where ".." is the state folder.
    syncFolders(Set(hexes.map { "../blobs/" + $0.prefix(2) }))
  }

  private func syncFolders(_ folders: Set<String>) {
    // Each fsync also flushes the disk's cache: many folders (a batch of small files spreads
    // over the shards) cost one syncfs instead, which commits them all with one flush.
    if folders.count > 4, let syncfs = syncFileSystem {
      _ = syncfs(workingFiles)
      return
    }
    for folder in folders.sorted() {
      let fd = openat(workingFiles, folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
      guard fd >= 0 else { continue }
      _ = fsync(fd)
      close(fd)
    }
  }

  /// Makes everything written so far in the state folder durable with one flush: the content
  /// and names of a batch of blobs and working files, where an fsync of each would cost a disk
  /// cache flush per file (about 4 ms each on an ordinary disk; a batch of 64 small files
  /// takes one). syncfs(2) flushes the whole file system, so it is for batches, never for
  /// one file, and never under a lock.
  public func syncEverything() {
    if let syncfs = syncFileSystem, syncfs(workingFiles) == 0 { return }
    sync()
  }

  /// Removes what an earlier run left on its way in: every file in ``incomingFolder``, and
  /// the `<inode>.sync` copies that earlier versions made beside a working file.
  public func removeIncomingLeftovers() {
    var folders = [Self.incomingFolder]
    for shard in 0..<256 { folders.append(Self.shardName(UInt64(shard))) }
    for folder in folders {
      let fd = openat(workingFiles, folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
      guard fd >= 0, let dir = fdopendir(fd) else { continue }
      defer { closedir(dir) }
      while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
          String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
        }
        if name.hasSuffix(".sync") { _ = unlinkat(fd, name, 0) }
      }
    }
  }
}

/// syncfs(2). Glibc declares it only under _GNU_SOURCE, which Swift's Glibc module is built
/// without, so it is looked up by name; nil where the C library lacks it.
private let syncFileSystem: (@convention(c) (Int32) -> Int32)? = {
  guard let symbol = dlsym(nil, "syncfs") else { return nil }
  return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
}()
