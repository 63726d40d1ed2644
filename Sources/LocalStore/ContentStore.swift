import ContentModel
import Crypto
import Dispatch
import DocumentModel
import Glibc
import Hub

/// The only code on a device that creates, writes, hashes, fsyncs, renames and deletes
/// content: the content-addressed blobs, and the content of working files as it comes and goes.
///
/// Others reach content through handles (``ContentFile`` to read, ``IncomingBlob`` for a blob
/// on its way in, ``Incoming`` for a new working file, ``KeptAside`` for a replaced file's
/// content), never through paths. The engine decides what to keep, fetch and drop; this store
/// does it. A blob is written to a temporary file, made durable (fsynced alone, or with its
/// whole batch by ``LocalStore/syncEverything()``), and only then named by a durable record, so
/// a record that names a blob never outlives the blob itself, whatever crashes in between.
public struct ContentStore: Sendable {
  /// The blob folder: `<hex prefix>/<hex>` for each blob, `tmp/` for blobs on their way.
  let folder: String
  /// The state folder, for files that hold content only while they are open.
  let directory: String
  /// An open descriptor of the working-file folder.
  let workingFiles: Int32
  /// Empty working files made ahead of the creates that take them.
  let pool: WorkingFilePool
  /// The blobs ``add(from:durable:replacing:)`` wrote in this run, checked as they were
  /// written.
  let checked = CheckedBlobs()

  /// The content of the state folder `directory`, made by ``LocalStore`` (its
  /// ``LocalStore/content``), the one instance every user shares.
  init(directory: String, workingFiles: Int32, pool: WorkingFilePool) {
    self.directory = directory
    self.workingFiles = workingFiles
    self.pool = pool
    folder = directory + "/blobs"
    mkdir(folder, 0o700)
    mkdir(folder + "/tmp", 0o700)
  }

  /// Removes the half-written and released blobs an earlier run left behind: only the one
  /// process that syncs this state calls it, as it starts.
  public func removeLeftovers() {
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

  func path(_ hash: ContentHash) -> String { blobPath(hex: hash.hex) }

  func blobPath(hex: String) -> String { folder + "/" + hex.prefix(2) + "/" + hex }

  /// Whether this device has the blob `hash` (not whether it is intact).
  public func contains(_ hash: ContentHash) -> Bool { access(path(hash), F_OK) == 0 }

  // MARK: - Reading

  /// The blob `hash` open for reading; nil when it is not here.
  public func openBlob(_ hash: ContentHash) -> ContentFile? {
    let name = path(hash)
    let fd = open(name, O_RDONLY | O_CLOEXEC)
    return fd >= 0 ? ContentFile(descriptor: fd, blobPath: name) : nil
  }

  /// The working file of `inode` open for reading, without touching its access time; nil
  /// when it is gone.
  public func openWorkingFile(_ inode: UInt64) -> ContentFile? {
    let fd = openat(
      workingFiles, LocalStore.workingFileName(inode), Self.workingFileReadFlags)
    return fd >= 0 ? ContentFile(descriptor: fd, blobPath: nil) : nil
  }

  /// How docsync opens a working file to read it for itself (hashing, restart checks, serving
  /// content to sync): O_NOATIME (glibc's value; Swift's Glibc module leaves it out), so that
  /// only the programs that read through the mount move its atime. Without it the hash of a
  /// restart scan stamped every atime a program had set with utimensat with the remount's time.
  /// The daemon owns every working file, which O_NOATIME needs.
  static let workingFileReadFlags: Int32 = O_RDONLY | O_CLOEXEC | 0o1_000_000

  /// What identifies the blob file of `hash` as it is now; nil when it is not here.
  public func blobIdentity(_ hash: ContentHash) -> BlobIdentity? {
    var info = stat()
    return stat(path(hash), &info) == 0 ? BlobIdentity(info) : nil
  }

  /// Whether `file` is the blob file of `hash` (not a working file that holds the same
  /// content).
  public func isBlobFile(_ file: ContentFile, _ hash: ContentHash) -> Bool {
    var named = stat()
    guard let open = file.status(), stat(path(hash), &named) == 0 else { return false }
    return open.st_dev == named.st_dev && open.st_ino == named.st_ino
  }

  /// Whether `file`, as it is now, was checked to hold `hash` in this run (or written from
  /// bytes hashed as they were written, or fetched and checked as it arrived): its content
  /// need not be hashed again.
  public func isChecked(_ file: ContentFile, _ hash: ContentHash) -> Bool {
    guard let identity = file.identity() else { return false }
    return checked.holds(identity, hash)
  }

  /// Notes that `file`, as it is now, holds `hash` (the caller has just checked it).
  public func noteChecked(_ file: ContentFile, _ hash: ContentHash) {
    if let identity = file.identity() { checked.note(hash, identity) }
  }

  /// Forgets what was checked of the content `hash`: its file has left the blob folder, or the
  /// working file that held it is no longer trusted for it.
  public func forgetChecked(_ hash: ContentHash) {
    checked.forget(hash)
  }

  /// Forgets every check: a trim removed files whose identities a new file could take.
  public func forgetAllChecked() {
    checked.forgetAll()
  }

  /// Whether the stored blob still has the content its name promises (read and hashed).
  public func verify(_ hash: ContentHash) -> Bool {
    guard let file = openBlob(hash), file.holds(hash) else { return false }
    noteChecked(file, hash)
    return true
  }

  /// Whether the blob file of `hash` is here and does not hold `hash`.
  public func holdsOtherBytes(_ hash: ContentHash) -> Bool {
    guard let file = openBlob(hash) else { return false }
    return !file.holds(hash)
  }

  /// The bytes of a small blob (a symlink target), checked against `hash`.
  public func bytes(_ hash: ContentHash) -> [UInt8]? {
    guard let result = openBlob(hash)?.readAll() else { return nil }
    return ContentHash(of: result) == hash ? result : nil
  }

  /// The chunk list of the content `file` holds, cut as it is read, if it is `hash`.
  public func chunkList(of file: ContentFile, expecting hash: ContentHash) -> ChunkList? {
    var sha: SHA256? = SHA256()
    var splitter = ContentSplitter(hasher: ChunkList.hasher)
    var offset: Int64 = 0
    do throws(HubError) {
      try BlobFile.copy(
        from: file.descriptor, to: nil, at: &offset, hasher: &sha, owners: (.caller, .caller),
        observe: { bytes in splitter.append(bytes) { _, _ in } })
    } catch {
      return nil
    }
    guard sha!.finalize().withUnsafeBytes({ Array($0) }) == hash.bytes else { return nil }
    return ChunkList(entries: splitter.finish { _, _ in }, scheme: .current)
  }

  // MARK: - Blobs on their way in

  /// A new temporary file in the blob folder, for a blob on its way in.
  public func incoming() throws(ContentError) -> IncomingBlob {
    var template = Array((folder + "/tmp/incoming-XXXXXX").utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { throw ContentError("cannot create a blob: \(BlobFile.errorText())") }
    return IncomingBlob(
      path: template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, descriptor: fd)
  }

  /// Moves a verified blob on its way in to its place as the blob `hash`.
  ///
  /// With `durable` false the caller makes its whole batch durable at once before any record
  /// names the blob.
  public func install(_ blob: IncomingBlob, as hash: ContentHash, durable: Bool = true)
    throws(ContentError)
  {
    guard !durable || fsync(blob.descriptor) == 0 else {
      throw ContentError("cannot write blob \(hash.hex): \(BlobFile.errorText())")
    }
    let final = path(hash)
    mkdir(String(final.dropLast(hash.hex.count + 1)), 0o700)
    guard rename(blob.path, final) == 0 else {
      throw ContentError("cannot store blob \(hash.hex): \(BlobFile.errorText())")
    }
    blob.installed()
  }

  /// Copies an open file into the store, hashing as it goes; returns the hash, the size, and
  /// the content's chunks, cut in the same pass (a version made from it moves as chunks
  /// without reading the file again). `durable` as for ``install(_:as:durable:)``. With
  /// `replacing`, the copy takes the place of a blob of the same hash that is there already
  /// (one that cannot be read), in one rename: the old file stays until the new one is whole.
  public func add(from source: ContentFile, durable: Bool = true, replacing: Bool = false)
    throws(ContentError) -> (ContentHash, Int64, ChunkList)
  {
    let blob = try incoming()
    var hasher: SHA256? = SHA256()
    var offset: Int64 = 0
    var splitter = ContentSplitter(hasher: ChunkList.hasher)
    // A large blob is written around the page cache: the checks the hub would make by reading
    // it back from the disk are made here, from the bytes in hand.
    let framed = (source.status().map { Int64($0.st_size) } ?? 0) >= Self.frameChecksMinimum
    var frames: [(offset: Int64, length: Int, check: UInt64)] = []
    var cut: Int64 = 0
    func frame(_ bytes: UnsafeRawBufferPointer, _ entry: ManifestEntry) {
      guard framed else { return }
      frames.append((cut, bytes.count, AdoptedChunk.frameHash(prefix: Self.rawFrame, bytes: bytes)))
      cut += Int64(bytes.count)
    }
    do throws(HubError) {
      try BlobFile.copy(
        from: source.descriptor, to: blob.descriptor, at: &offset, hasher: &hasher,
        owners: (.caller, .caller), observe: { bytes in splitter.append(bytes, frame) })
    } catch {
      throw ContentError("cannot copy a file to sync into the blob store: \(error.description)")
    }
    let list = ChunkList(entries: splitter.finish(frame), scheme: .current)
    let hash = ContentHash(hasher!.finalize().withUnsafeBytes { Digest256(bytes: $0)! })
    if !contains(hash) || replacing {
      try install(blob, as: hash, durable: durable)
      checked.note(hash, path: path(hash), frames: frames)
    }
    return (hash, Int64(offset), list)
  }

  /// The smallest content whose chunks' frame checks ``add(from:durable:replacing:)`` keeps:
  /// smaller blobs are written through the page cache, where reading them back costs little.
  public static let frameChecksMinimum = BlobFile.writeAroundThreshold

  /// The first byte of a chunk stored raw (uncompressed): the frame whose checks are kept.
  public static let rawFrame: [UInt8] = [ObjectFrame.raw.rawValue]

  /// What the hub's checks of the raw frames of the chunks of `file`'s content `hash` are made
  /// of (``AdoptedChunk/frameHash(prefix:bytes:)``), by offset, as this run computed them when
  /// it wrote the blob; empty unless the file is still as it was then and this run kept them.
  public func frameChecks(of file: ContentFile, _ hash: ContentHash) -> [Int64: (
    length: Int, hash: UInt64
  )] {
    guard let identity = file.identity() else { return [:] }
    var byOffset: [Int64: (length: Int, hash: UInt64)] = [:]
    for frame in checked.frames(identity, hash) {
      byOffset[frame.offset] = (frame.length, frame.check)
    }
    return byOffset
  }

  /// Lets go of the frame checks of `hash`: the hub has taken its chunks, or would not.
  public func forgetFrameChecks(_ hash: ContentHash) {
    checked.forgetFrames(hash)
  }

  /// Records the content of the working file of `inode` as a blob: the file is made durable
  /// first (here, or with its batch when `durable` is false, before the window's records), so
  /// that a version never names content a power cut can take back from the file.
  public func addWorkingFile(_ inode: UInt64, durable: Bool) throws(ContentError) -> (
    ContentHash, Int64, ChunkList
  ) {
    guard let file = openWorkingFile(inode) else {
      throw ContentError("cannot open its working file: \(BlobFile.errorText())")
    }
    if durable { _ = fsync(file.descriptor) }
    return try add(from: file, durable: durable)
  }

  /// Stores bytes (a symlink's target) as a blob.
  public func add(bytes: [UInt8]) throws(ContentError) -> ContentHash {
    let hash = ContentHash(of: bytes)
    if contains(hash) { return hash }
    try add(bytes: bytes, as: hash)
    return hash
  }

  /// Stores bytes already checked against `hash` as that blob; `durable` as for
  /// ``install(_:as:durable:)``.
  public func add(bytes: [UInt8], as hash: ContentHash, durable: Bool = true) throws(ContentError) {
    let blob = try incoming()
    try blob.write(bytes, at: 0)
    try install(blob, as: hash, durable: durable)
  }

  // MARK: - Letting go

  /// Every blob here with the bytes it takes on disk and when it was last used (the later of
  /// its access and modification times, in seconds): what the content cache's trim weighs.
  public func storedBlobs() -> [(hex: String, size: Int64, used: Int)] {
    var files: [(hex: String, size: Int64, used: Int)] = []
    let digits = Array("0123456789abcdef")
    for shard in 0..<256 {
      let shardFolder = folder + "/" + String([digits[shard >> 4], digits[shard & 0xf]])
      guard let dir = opendir(shardFolder) else { continue }
      while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) {
          String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
        }
        guard name.utf8.count == 64 else { continue }
        var info = stat()
        guard stat(shardFolder + "/" + name, &info) == 0 else { continue }
        files.append(
          (name, Int64(info.st_blocks) * 512, max(info.st_atim.tv_sec, info.st_mtim.tv_sec)))
      }
      closedir(dir)
    }
    return files
  }

  /// Removes the blob `hash` (damaged, or no longer needed).
  public func remove(_ hash: ContentHash) {
    checked.forget(hash)
    unlink(path(hash))
  }

  /// Removes a cached blob named by its hex digest (the content cache's walk).
  public func removeCached(hex: String) {
    unlink(blobPath(hex: hex))
  }

  /// Lets go of blobs that the hub has and working files hold. Each is renamed out of its place
  /// at once, so that the same content saved again is a new blob, never one on its way out,
  /// and unlinked later on a queue of its own: unlinks on the engine loop were a seventh of a
  /// 10,000-file push's CPU, and one cost about four renames here (178 µs and 46 µs a 4 KiB
  /// file). A crash leaves the renamed files in `tmp/`, which the next start empties.
  public func release(_ hashes: [ContentHash]) {
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
  public func finishReleases() {
    Self.remover.sync {}
  }

  /// Where released blobs are unlinked, one batch after another.
  private static let remover = DispatchQueue(label: "docsync.blobs.release", qos: .utility)
}
