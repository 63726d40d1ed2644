import Foundation
import Glibc
import Synchronization

/// The folder beside a SQLite hub whose pack files hold its content objects' bytes, end to end.
///
/// In the hub file every byte of an object was written twice (the write-ahead log, then its
/// checkpoint) by the hub's one writer thread, a third of a chunked push's processor time; in a
/// pack it is written once, and a batch costs one `fdatasync` before the rows that name its
/// bytes by pack, offset and length commit, so no row ever names bytes not on disk.
///
/// Every hub instance (every process) appends only to packs it created itself, new names each,
/// and holds an exclusive `flock` on the one it appends to for as long as it may append to it.
/// A pack that nobody holds is sealed for good: its bytes never change again, which is what
/// lets prune rewrite or remove it (holding the lock itself) with no other coordination, and a
/// reader with the file open keeps reading the right bytes after a rewrite.
final class PackFolder: Sendable {
  /// The folder's path, for messages.
  let path: String
  /// The open folder, which every name below is relative to.
  let descriptor: Int32
  /// The size past which this instance starts a new pack.
  let packSize: Int64

  /// The pack this instance appends to, and its size.
  private let current = Mutex<(pack: PackHandle, size: Int64)?>(nil)
  /// Packs open for reading, by name.
  private let readers = Mutex<[String: PackHandle]>([:])

  /// The most packs kept open for reading.
  static let openReaders = 32

  /// The ending of a pack's name.
  static let suffix = ".pack"

  /// Opens the folder at `path`, creating it (private, as the hub file is) when missing.
  init(path: String, packSize: Int64) throws(HubError) {
    self.path = path
    self.packSize = packSize
    if mkdir(path, 0o700) == 0 {
      BlobFolder.syncFolder(containing: path)
    } else if errno != EEXIST {
      throw .invalidLocation(
        "cannot create the folder \(path) for the hub's packs: \(BlobFile.errorText())")
    }
    descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if descriptor < 0 {
      throw .invalidLocation("cannot open \(path), the hub's pack folder: \(BlobFile.errorText())")
    }
  }

  deinit {
    _ = Glibc.close(descriptor)
  }

  /// Appends `objects` to this instance's pack and makes them durable; returns where each
  /// went. Starts a new pack first when the current one is full. Called only inside the hub's
  /// write transaction, which commits the rows naming these bytes before the next call can
  /// seal the pack.
  func append(_ objects: [[UInt8]]) throws(HubError) -> (pack: String, offsets: [Int64]) {
    try current.withLock { current throws(HubError) in
      if current == nil || current!.size >= packSize {
        current = (try create(), 0)
      }
      let pack = current!.pack
      var offset = current!.size
      var offsets: [Int64] = []
      offsets.reserveCapacity(objects.count)
      // Whatever happens next, the bytes already written stay a tail that no row names.
      defer { current!.size = offset }
      for object in objects {
        offsets.append(offset)
        try pack.write(object, at: offset)
        offset += Int64(object.count)
      }
      try pack.sync()
      return (pack.name, offsets)
    }
  }

  /// Stops appending to the current pack, which is then sealed. Called inside a write
  /// transaction (or where no put runs), never between an append and its commit.
  func seal() {
    current.withLock { $0 = nil }
  }

  /// A new, empty pack under a name nobody used, locked for this instance, its name durable.
  func create() throws(HubError) -> PackHandle {
    while true {
      let name = String(UInt64.random(in: 0 ... .max), radix: 16) + Self.suffix
      let fd = openat(descriptor, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
      if fd < 0 {
        if errno == EEXIST { continue }
        throw .failed("cannot create a pack in \(path): \(BlobFile.errorText())")
      }
      let pack = PackHandle(name: name, descriptor: fd)
      // A prune that listed the empty file before the lock took it may have removed it.
      guard flock(fd, LOCK_EX | LOCK_NB) == 0, isNamed(pack) else { continue }
      if fsync(descriptor) != 0 {
        throw .failed("cannot write the folder \(path) to disk: \(BlobFile.errorText())")
      }
      return pack
    }
  }

  /// A new pack that is the file open as `file` itself, under a new name (a hard link: the
  /// file keeps its other names), locked for this instance until the caller lets go, the name
  /// durable. Nil when the file is on another file system or cannot be linked here.
  func adopt(_ file: Int32) throws(HubError) -> PackHandle? {
    var folderInfo = stat()
    var fileInfo = stat()
    guard fstat(descriptor, &folderInfo) == 0, fstat(file, &fileInfo) == 0,
      folderInfo.st_dev == fileInfo.st_dev
    else { return nil }
    // A few tries, then the caller copies: a name left behind by one that failed is a pack no
    // row names, which the next compaction removes.
    for _ in 0..<8 {
      let name = String(UInt64.random(in: 0 ... .max), radix: 16) + Self.suffix
      // Through /proc, the very file the caller has open, whatever its name leads to now.
      guard linkat(AT_FDCWD, "/proc/self/fd/\(file)", descriptor, name, AT_SYMLINK_FOLLOW) == 0
      else {
        if errno == EEXIST { continue }
        return nil
      }
      let fd = openat(descriptor, name, O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else { return nil }
      let pack = PackHandle(name: name, descriptor: fd)
      var linked = stat()
      // A prune that listed the name before the lock took it may have removed it.
      guard flock(fd, LOCK_EX | LOCK_NB) == 0, isNamed(pack), fstat(fd, &linked) == 0,
        linked.st_ino == fileInfo.st_ino
      else { continue }
      if fsync(descriptor) != 0 {
        remove(name)
        throw .failed("cannot write the folder \(path) to disk: \(BlobFile.errorText())")
      }
      return pack
    }
    return nil
  }

  /// The pack `name` opened and locked, when no instance appends to it and nobody else holds
  /// it; nil otherwise, or when it is gone.
  func lockSealed(_ name: String) -> PackHandle? {
    let fd = openat(descriptor, name, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    let pack = PackHandle(name: name, descriptor: fd)
    guard flock(fd, LOCK_EX | LOCK_NB) == 0, isNamed(pack) else { return nil }
    return pack
  }

  /// Whether the folder's name of `pack` still leads to the file it has open.
  private func isNamed(_ pack: PackHandle) -> Bool {
    var named = stat()
    var open = stat()
    return fstatat(descriptor, pack.name, &named, 0) == 0 && fstat(pack.descriptor, &open) == 0
      && named.st_ino == open.st_ino && named.st_dev == open.st_dev
  }

  /// Reads an object's bytes from `pack`; nil when the pack is gone (a prune in some process
  /// rewrote it: the row naming it has moved, and the caller reads the row again).
  func read(_ pack: String, at offset: Int64, length: Int, after prefix: [UInt8] = [])
    throws(HubError) -> [UInt8]?
  {
    guard let handle = reader(pack) else { return nil }
    return try handle.read(at: offset, length: length, after: prefix)
  }

  private func reader(_ name: String) -> PackHandle? {
    if let open = readers.withLock({ $0[name] }) {
      if open.isLinked { return open }
      forget(name)
    }
    guard !name.contains("/") else { return nil }
    let fd = openat(descriptor, name, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    let handle = PackHandle(name: name, descriptor: fd)
    readers.withLock { readers in
      if readers.count >= Self.openReaders { readers.removeAll() }
      readers[name] = handle
    }
    return handle
  }

  /// Drops the reading handle of `name`, so that a removed pack's space comes back.
  func forget(_ name: String) {
    _ = readers.withLock { $0.removeValue(forKey: name) }
  }

  /// The names of the packs in the folder.
  func names() -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter {
      $0.hasSuffix(Self.suffix)
    }
  }

  /// Removes the pack `name`, which the caller holds locked and no row names.
  func remove(_ name: String) {
    forget(name)
    _ = unlinkat(descriptor, name, 0)
  }

  /// The size of the pack `name`, nil when it is gone.
  func size(of name: String) -> Int64? {
    var info = stat()
    return fstatat(descriptor, name, &info, 0) == 0 ? Int64(info.st_size) : nil
  }

  /// The bytes all packs take, for tests and reports.
  func totalSize() -> Int64 {
    names().reduce(0) { total, name in
      var info = stat()
      return total + (fstatat(descriptor, name, &info, 0) == 0 ? Int64(info.st_size) : 0)
    }
  }
}
