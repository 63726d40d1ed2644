import Crypto
import Foundation
import Glibc

/// The folder beside a SQLite hub that holds its large blobs, one file each, named by hash.
///
/// A large blob's bytes go to disk once here, where in the hub file they went twice (the
/// write-ahead log, then its checkpoint): `perf` of a 1 GiB push put SQLite's writes at 26% of
/// the daemon's CPU. A file is written under a temporary name, fsynced, renamed to its hash
/// name and the folder fsynced, before the hub's row names it; so a name in the folder is
/// always a complete blob, and a crash leaves at most a temporary file or a file no row names,
/// which ``SQLiteHub/sweepBlobFiles(olderThan:)`` removes later.
struct BlobFolder: Sendable {
  /// The folder's path, for messages.
  let path: String
  /// The open folder, which every name below is relative to.
  let descriptor: Int32

  /// Prefix of the names of files being written.
  static let temporaryPrefix = ".put-"

  /// Opens the folder at `path`, creating it (private, as the hub file is) when missing.
  init(path: String) throws(HubError) {
    self.path = path
    if mkdir(path, 0o700) == 0 {
      // The new folder's name is durable before any blob in it is recorded.
      Self.syncFolder(containing: path)
    } else if errno != EEXIST {
      throw .invalidLocation(
        "cannot create the folder \(path) for the hub's blobs: \(BlobFile.errorText())")
    }
    descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if descriptor < 0 {
      throw .invalidLocation("cannot open \(path), the hub's blob folder: \(BlobFile.errorText())")
    }
  }

  func close() {
    _ = Glibc.close(descriptor)
  }

  /// A file written from a source, under a temporary name, not yet a blob.
  struct Temporary: Sendable {
    let name: String
    let size: Int64
  }

  /// Copies the whole of `source` (from offset 0, whatever its own offset) into a new
  /// temporary file and fsyncs it. Unless `checked`, hashes every byte on the way and, when
  /// they are not `hash`, removes the file and throws ``HubError/integrity(_:)``. With
  /// `checked`, the caller vouches for the bytes and the kernel copies them
  /// (`copy_file_range`), so they never pass through this process.
  func write(_ hash: [UInt8], from source: Int32, checked: Bool) throws(HubError) -> Temporary {
    let name = Self.temporaryPrefix + hexString(hash) + "-\(UInt64.random(in: 0 ... .max))"
    let fd = openat(descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    if fd < 0 {
      throw .failed("cannot create a file in \(path): \(BlobFile.errorText())")
    }
    defer { _ = Glibc.close(fd) }
    do throws(HubError) {
      var hasher = checked ? nil : SHA256()
      var offset: Int64 = 0
      if checked { offset = Self.copyInKernel(from: source, to: fd) }
      try BlobFile.copy(
        from: source, to: fd, at: &offset, hasher: &hasher, owners: (.caller, .hub))
      if let hasher {
        let digest = Array(hasher.finalize())
        guard digest == hash else {
          throw HubError.integrity(
            "the file's SHA-256 is \(hexString(digest)), not the \(hexString(hash)) it was put under"
          )
        }
      }
      if fsync(fd) != 0 {
        throw HubError.failed("cannot write \(path)/\(name) to disk: \(BlobFile.errorText())")
      }
      return Temporary(name: name, size: offset)
    } catch {
      discard(name)
      throw error
    }
  }

  /// Gives the temporary file its blob name and makes the name durable. Another process that
  /// put the same blob at the same moment wrote the same bytes, so either file will do.
  func install(_ temporary: Temporary, as hash: [UInt8]) throws(HubError) {
    if renameat(descriptor, temporary.name, descriptor, hexString(hash)) != 0 {
      let reason = BlobFile.errorText()
      discard(temporary.name)
      throw .failed("cannot name the blob \(hexString(hash)) in \(path): \(reason)")
    }
    if fsync(descriptor) != 0 {
      throw .failed("cannot write the folder \(path) to disk: \(BlobFile.errorText())")
    }
  }

  /// Whether a file whose status is `info` lives on the folder's file system, where a rename
  /// can move it in.
  func shares(fileSystemWith info: stat) -> Bool {
    var own = stat()
    return fstat(descriptor, &own) == 0 && own.st_dev == info.st_dev
  }

  /// Renames the file at `path` into the folder as the blob `hash`; false when it cannot be
  /// renamed (gone meanwhile, another file system, no permission), the file then where it was
  /// and the caller's to copy. The caller makes the name durable (``syncNames()``).
  func adopt(_ path: String, as hash: [UInt8]) -> Bool {
    renameat(AT_FDCWD, path, descriptor, hexString(hash)) == 0
  }

  /// Makes the folder's names durable.
  func syncNames() throws(HubError) {
    if fsync(descriptor) != 0 {
      throw .failed("cannot write the folder \(path) to disk: \(BlobFile.errorText())")
    }
  }

  /// Gives the blob's file back to `path`, where ``adopt(_:as:)`` took it from.
  func giveBack(_ hash: [UInt8], to path: String) {
    _ = renameat(descriptor, hexString(hash), AT_FDCWD, path)
  }

  /// The inode number of the blob's file, nil when there is none.
  func inode(of hash: [UInt8]) -> UInt? {
    var info = stat()
    guard fstatat(descriptor, hexString(hash), &info, 0) == 0 else { return nil }
    return info.st_ino
  }

  /// Sets the blob's file's modification time to now: a file no row names is swept only once
  /// it is a day old, and a file taken over may be older than that (see ``leftovers(olderThan:blobs:)``).
  func touch(_ hash: [UInt8]) {
    _ = utimensat(descriptor, hexString(hash), nil, 0)
  }

  func discard(_ name: String) {
    _ = unlinkat(descriptor, name, 0)
  }

  /// Removes the blob's file, if any.
  func remove(_ hash: [UInt8]) {
    discard(hexString(hash))
  }

  /// The size of the blob's file, nil when there is none.
  func size(of hash: [UInt8]) -> Int64? {
    var info = stat()
    guard fstatat(descriptor, hexString(hash), &info, 0) == 0 else { return nil }
    return Int64(info.st_size)
  }

  /// Copies the blob's file into `destination` from offset 0 (when given) and returns how many
  /// bytes there were and their SHA-256; the caller judges them. Throws
  /// ``HubError/integrity(_:)`` when the file is missing: its row says the hub has it.
  func read(_ hash: [UInt8], to destination: Int32?) throws(HubError) -> (
    size: Int64, digest: [UInt8]
  ) {
    let fd = openat(descriptor, hexString(hash), O_RDONLY | O_CLOEXEC)
    if fd < 0 {
      if errno == ENOENT {
        throw .integrity("the hub's file for blob \(hexString(hash)) is missing")
      }
      throw .failed(
        "cannot open the hub's file for blob \(hexString(hash)): \(BlobFile.errorText())")
    }
    defer { _ = Glibc.close(fd) }
    _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
    var hasher: SHA256? = SHA256()
    var offset: Int64 = 0
    try BlobFile.copy(
      from: fd, to: destination, at: &offset, hasher: &hasher, readOnce: true,
      owners: (.hub, .caller))
    return (offset, Array(hasher!.finalize()))
  }

  /// The blob's file open for reading, nil when it cannot be opened; the caller closes it.
  func openForReading(_ hash: [UInt8]) -> Int32? {
    let fd = openat(descriptor, hexString(hash), O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
    return fd
  }

  /// The bytes of the blob's file when it holds at most `limit` of them (unchecked: the caller
  /// hashes them), nil when it is missing or larger.
  func contents(_ hash: [UInt8], limit: Int64) -> [UInt8]? {
    let fd = openat(descriptor, hexString(hash), O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { _ = Glibc.close(fd) }
    guard let bytes = try? BlobFile.readChunk(fd, at: 0, count: Int(limit) + 1, of: .hub),
      bytes.count <= limit
    else { return nil }
    return bytes
  }

  /// What a crash may have left: temporary files not written to for `age` seconds (their
  /// writer crashed or was killed), and blob files as old, which the caller removes only when
  /// no row names them (the hub crashed between the rename and the row, or between dropping
  /// the row and removing the file), unless `blobs` is false. Found outside any lock: listing
  /// a large folder is slow.
  func leftovers(olderThan age: TimeInterval, blobs wanted: Bool = true) -> (
    temporaries: [String], blobs: [[UInt8]]
  ) {
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else {
      return ([], [])
    }
    let cutoff = Date().timeIntervalSince1970 - age
    var temporaries: [String] = []
    var blobs: [[UInt8]] = []
    for name in names {
      let temporary = name.hasPrefix(Self.temporaryPrefix)
      guard temporary || wanted else { continue }
      var info = stat()
      guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0,
        Double(info.st_mtim.tv_sec) < cutoff
      else { continue }
      if temporary {
        temporaries.append(name)
      } else if let hash = Self.hash(named: name) {
        blobs.append(hash)
      }
    }
    return (temporaries, blobs)
  }

  /// The hash a blob file's name spells, nil for any other name.
  static func hash(named name: String) -> [UInt8]? {
    let digits = Array(name.utf8)
    guard digits.count == 64 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(32)
    for index in stride(from: 0, to: 64, by: 2) {
      guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else {
        return nil
      }
      bytes.append(high << 4 | low)
    }
    return bytes
  }

  private static func hexValue(_ digit: UInt8) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
    default: nil
    }
  }

  /// Copies as much of `source` as the kernel will into `destination`, both from offset 0, and
  /// returns how far it got; ``BlobFile/copy(from:to:at:hasher:readOnce:)`` does the rest (all of it when the
  /// kernel cannot copy between these files: EXDEV, ENOSYS, EINVAL, EOPNOTSUPP).
  private static func copyInKernel(from source: Int32, to destination: Int32) -> Int64 {
    guard let copyFileRange else { return 0 }
    var input: Int64 = 0
    var output: Int64 = 0
    while true {
      let copied = copyFileRange(source, &input, destination, &output, 8 * BlobFile.copyStep, 0)
      if copied < 0 && errno == EINTR { continue }
      if copied <= 0 { return input }
      // As for written chunks: the disk starts on these while the next ones are copied.
      BlobFile.startWriteback(destination, before: output, count: copied)
    }
  }

  /// Makes the name of `path` durable in its folder (a new blob or pack folder beside the hub).
  static func syncFolder(containing path: String) {
    let fd = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = fsync(fd)
    _ = Glibc.close(fd)
  }

  private typealias CopyFileRange =
    @convention(c) (
      Int32, UnsafeMutablePointer<Int64>?, Int32, UnsafeMutablePointer<Int64>?, Int, UInt32
    )
    -> Int

  /// glibc's `copy_file_range`, which Swift's Glibc module does not import (it is declared only
  /// under `_GNU_SOURCE`); nil when this glibc lacks it.
  private static let copyFileRange: CopyFileRange? = dlsym(
    dlopen(nil, RTLD_NOW), "copy_file_range"
  ).map { unsafeBitCast($0, to: CopyFileRange.self) }
}
