import ContentModel
import Crypto
import Dispatch
import DocumentModel
import Glibc
import Hub
import LocalStore

/// The device's content-addressed blobs: the content of every version it has made or fetched.
///
/// A blob is written to a temporary file, made durable (fsynced alone, or with its whole batch
/// by ``LocalStore/syncEverything()``), and only then named by a durable record, so a record
/// that names a blob never outlives the blob itself, whatever crashes in between.
struct BlobStore: Sendable {
  let folder: String
  let store: LocalStore
  /// The blobs ``add(from:durable:)`` wrote in this run, checked as they were written.
  let checked = CheckedBlobs()

  init(store: LocalStore) {
    self.store = store
    folder = store.blobFolder
    mkdir(folder, 0o700)
    mkdir(folder + "/tmp", 0o700)
    // Half-written blobs of an earlier run are garbage.
    if let dir = opendir(folder + "/tmp") {
      while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) {
          String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
        }
        if name != "." && name != ".." { unlink(folder + "/tmp/" + name) }
      }
      closedir(dir)
    }
  }

  func path(_ hash: ContentHash) -> String { store.blobPath(hex: hash.hex) }

  func contains(_ hash: ContentHash) -> Bool { access(path(hash), F_OK) == 0 }

  /// Whether the open file `fd` is the blob file of `hash` (not a working file that holds the
  /// same content).
  func isBlobFile(_ fd: Int32, _ hash: ContentHash) -> Bool {
    var open = stat()
    var named = stat()
    return fstat(fd, &open) == 0 && stat(path(hash), &named) == 0
      && open.st_dev == named.st_dev && open.st_ino == named.st_ino
  }

  /// A new temporary file in the blob folder, for a blob on its way in.
  func temporaryFile() -> (path: String, descriptor: Int32)? {
    var template = Array((folder + "/tmp/incoming-XXXXXX").utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { return nil }
    return (template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, fd)
  }

  /// Moves a verified temporary file to its place as the blob `hash`.
  ///
  /// With `durable` false the caller makes its whole batch durable at once before any record
  /// names the blob.
  func install(temporary: String, descriptor: Int32, as hash: ContentHash, durable: Bool = true)
    throws(SyncError)
  {
    guard !durable || fsync(descriptor) == 0 else {
      close(descriptor)
      unlink(temporary)
      throw .local("cannot write blob \(hash.hex): \(String(cString: strerror(errno)))")
    }
    close(descriptor)
    let final = path(hash)
    mkdir(String(final.dropLast(hash.hex.count + 1)), 0o700)
    guard rename(temporary, final) == 0 else {
      unlink(temporary)
      throw .local("cannot store blob \(hash.hex): \(String(cString: strerror(errno)))")
    }
  }

  /// Copies an open file into the store, hashing as it goes; returns the hash and the size.
  /// `durable` as for ``install(temporary:descriptor:as:durable:)``. With `replacing`, the copy
  /// takes the place of a blob of the same hash that is there already (one that cannot be
  /// read), in one rename: the old file stays until the new one is whole.
  ///
  /// The content is cut into chunks in the same pass (``ChunkList``): a version made from it
  /// moves as chunks without reading the file again.
  func add(from source: Int32, durable: Bool = true, replacing: Bool = false) throws(SyncError)
    -> (ContentHash, Int64, ChunkList)
  {
    guard let (temporary, fd) = temporaryFile() else {
      throw .local("cannot create a blob: \(String(cString: strerror(errno)))")
    }
    var hasher: SHA256? = SHA256()
    var offset: Int64 = 0
    var splitter = ContentSplitter(hasher: ChunkList.hasher)
    do throws(HubError) {
      try BlobFile.copy(
        from: source, to: fd, at: &offset, hasher: &hasher, owners: (.caller, .caller),
        observe: { bytes in splitter.append(bytes) { _, _ in } })
    } catch {
      close(fd)
      unlink(temporary)
      throw .local("cannot copy a file to sync into the blob store: \(error.description)")
    }
    let hash = ContentHash(hasher!.finalize().withUnsafeBytes { Digest256(bytes: $0)! })
    if contains(hash) && !replacing {
      close(fd)
      unlink(temporary)
    } else {
      try install(temporary: temporary, descriptor: fd, as: hash, durable: durable)
      checked.note(hash, path: path(hash))
    }
    return (hash, Int64(offset), ChunkList(entries: splitter.finish { _, _ in }))
  }

  /// Stores bytes (a symlink's target) as a blob.
  func add(bytes: [UInt8]) throws(SyncError) -> ContentHash {
    let hash = ContentHash(of: bytes)
    if contains(hash) { return hash }
    try add(bytes: bytes, as: hash)
    return hash
  }

  /// Stores bytes already checked against `hash` as that blob; `durable` as for
  /// ``install(temporary:descriptor:as:durable:)``.
  func add(bytes: [UInt8], as hash: ContentHash, durable: Bool = true) throws(SyncError) {
    guard let (temporary, fd) = temporaryFile() else {
      throw .local("cannot create a blob: \(String(cString: strerror(errno)))")
    }
    guard writeAll(fd, bytes, count: bytes.count) else {
      close(fd)
      unlink(temporary)
      throw .local("cannot write a blob: \(String(cString: strerror(errno)))")
    }
    try install(temporary: temporary, descriptor: fd, as: hash, durable: durable)
  }

  /// Whether the stored blob still has the content its name promises.
  func verify(_ hash: ContentHash) -> Bool {
    let fd = open(path(hash), O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var hasher = SHA256()
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while true {
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      if n < 0 { return false }
      if n == 0 { break }
      buffer.withUnsafeBytes {
        hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n]))
      }
    }
    return hasher.finalize().withUnsafeBytes { Array($0) } == hash.bytes
  }

  /// The bytes of a small blob (a symlink target).
  func bytes(_ hash: ContentHash) -> [UInt8]? {
    let fd = open(path(hash), O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    guard let result = readAll(fd) else { return nil }
    return ContentHash(of: result) == hash ? result : nil
  }

  func remove(_ hash: ContentHash) {
    checked.forget(hash)
    unlink(path(hash))
  }

  /// Lets go of blobs that the hub has and working files hold. Each is renamed out of its place
  /// at once, so that the same content saved again is a new blob, never one on its way out,
  /// and unlinked later on a queue of its own: unlinks on the engine loop were a seventh of a
  /// 10,000-file push's CPU, and one cost about four renames here (178 µs and 46 µs a 4 KiB
  /// file). A crash leaves the renamed files in `tmp/`, which the next start empties.
  func release(_ hashes: [ContentHash]) {
    var leaving: [String] = []
    for hash in hashes {
      checked.forget(hash)
      let name = folder + "/tmp/released-" + hash.hex
      if rename(path(hash), name) == 0 { leaving.append(name) }
    }
    guard !leaving.isEmpty else { return }
    Self.remover.async { [leaving] in
      for name in leaving { unlink(name) }
    }
  }

  /// Waits until the blobs released so far are unlinked: a sync returns with the space given
  /// back.
  func finishReleases() {
    Self.remover.sync {}
  }

  /// Where released blobs are unlinked, one batch after another.
  private static let remover = DispatchQueue(label: "docsync.blobs.release", qos: .utility)
}

/// Everything an open file holds from where it is to its end; nil when a read fails.
func readAll(_ fd: Int32) -> [UInt8]? {
  var result: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 65536)
  while true {
    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if n < 0 && errno == EINTR { continue }
    if n < 0 { return nil }
    if n == 0 { return result }
    result += buffer[0..<n]
  }
}

func writeAll(_ fd: Int32, _ bytes: [UInt8], count: Int) -> Bool {
  var done = 0
  while done < count {
    let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, count - done) }
    if n < 0 && errno == EINTR { continue }
    if n <= 0 { return false }
    done += n
  }
  return true
}

/// Why a sync step failed.
public enum SyncError: Error, Sendable, CustomStringConvertible, Equatable {
  case local(String)
  case hub(String)
  case timeout(String)
  case paused

  public var description: String {
    switch self {
    case .local(let reason): reason
    case .hub(let reason): reason
    case .timeout(let reason): reason
    case .paused: "syncing is paused (docsync resume)"
    }
  }

  /// A hub call's failure: the caller's own file's (a full disk here) is local, any other the
  /// hub's.
  init(_ error: HubError) {
    if case .local(let reason) = error {
      self = .local(reason)
    } else {
      self = .hub(error.description)
    }
  }
}
