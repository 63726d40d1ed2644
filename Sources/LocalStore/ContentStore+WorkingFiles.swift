import Crypto
import DocumentModel
import Glibc
import Hub

extension ContentStore {
  /// A new, empty working file under ``LocalStore/incomingFolder``, open for writing: its name relative
  /// to `workingFiles` and its descriptor.
  public func createIncomingFile() -> (name: String, descriptor: Int32)? {
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<8 {
      let name =
        LocalStore.incomingFolder + "/" + String(generator.next() as UInt64, radix: 16) + ".sync"
      let fd = openat(workingFiles, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
      if fd >= 0 { return (name, fd) }
      if errno != EEXIST { return nil }
    }
    return nil
  }

  /// A new name under ``LocalStore/incomingFolder`` for a file that is renamed there (a blob that becomes
  /// a working file): 64 random bits, as ``createIncomingFile()`` names its files, without the
  /// cost of creating one.
  public func incomingName() -> String {
    var generator = SystemRandomNumberGenerator()
    return LocalStore.incomingFolder + "/" + String(generator.next() as UInt64, radix: 16) + ".sync"
  }

  /// Removes a working file that did not make it into the tree.
  public func removeIncomingFile(_ name: String) {
    _ = unlinkat(workingFiles, name, 0)
  }

  // MARK: - New working files for content that lands

  /// A new working file with the content `source` holds, checked against `hash` as it is
  /// copied, with the version's modification time `time`, made durable (here, or with its
  /// batch when `durable` is false).
  public func copyIntoNewWorkingFile(
    from source: ContentFile, hash: ContentHash, time: Int64, durable: Bool
  ) -> WorkingFileCopy {
    guard let (incoming, fd) = createIncomingFile() else {
      return .cannotWrite(BlobFile.errorText())
    }
    var keep = false
    defer {
      close(fd)
      if !keep { removeIncomingFile(incoming) }
    }
    var hasher: SHA256? = SHA256()
    var copied: Int64 = 0
    do throws(HubError) {
      try BlobFile.copy(
        from: source.descriptor, to: fd, at: &copied, hasher: &hasher,
        owners: (.caller, .caller))
    } catch {
      return .failedCopy(error.description)
    }
    guard hasher!.finalize().withUnsafeBytes({ Array($0) }) == hash.bytes else {
      return .otherBytes
    }
    Self.setTime(fd, time)
    guard !durable || fsync(fd) == 0 else { return .cannotWrite(BlobFile.errorText()) }
    keep = true
    return .made(Incoming(name: incoming, fromBlob: nil))
  }

  /// A new working file with `bytes` (checked by the caller against their hash on arrival)
  /// and the version's time `time`: one create and one write, made durable here or with its
  /// batch when `durable` is false.
  public func writeNewWorkingFile(_ bytes: [UInt8], time: Int64, durable: Bool)
    throws(ContentError) -> Incoming
  {
    guard let (incoming, fd) = createIncomingFile() else {
      throw ContentError(BlobFile.errorText())
    }
    defer { close(fd) }
    let done = bytes.withUnsafeBytes { Self.writeAll($0, to: fd, at: 0) }
    guard done == bytes.count, !durable || fsync(fd) == 0 else {
      let reason = BlobFile.errorText()
      removeIncomingFile(incoming)
      throw ContentError(reason)
    }
    Self.setTime(fd, time)
    return Incoming(name: incoming, fromBlob: nil)
  }

  /// Renames the blob `hash` into a new working file with the version's time `time`, after
  /// checking it against its hash unless it was checked as its file still is (just fetched):
  /// the content is then held once, not copied.
  public func moveBlobIntoNewWorkingFile(_ hash: ContentHash, time: Int64, durable: Bool)
    -> BlobMove
  {
    guard let file = openBlob(hash) else { return .absent }
    guard isChecked(file, hash) || file.holds(hash) else {
      remove(hash)
      return .damaged
    }
    let incoming = incomingName()
    Self.setTime(file.descriptor, time)
    guard !durable || fsync(file.descriptor) == 0,
      renameat(AT_FDCWD, path(hash), workingFiles, incoming) == 0
    else { return .failed }
    // The blob file is gone from the blob folder: nothing of this run vouches for it any more.
    checked.forget(hash)
    return .moved(Incoming(name: incoming, fromBlob: hash))
  }

  /// A new working file that did not make it into the tree: a moved blob goes back to the blob
  /// folder (its content is still a version's), a copy is removed.
  public func discard(_ incoming: Incoming) {
    if let hash = incoming.fromBlob,
      renameat(workingFiles, incoming.name, AT_FDCWD, path(hash)) == 0
    {
      return
    }
    removeIncomingFile(incoming.name)
  }

  // MARK: - Content a replaced working file held

  /// A second name, in the blob folder, for the working file of `inode`, made before a rename
  /// replaces it (no copy); nil when it cannot be made.
  public func keepAside(workingFile inode: UInt64) -> KeptAside? {
    guard let blob = try? incoming() else { return nil }
    let link = blob.path
    // Only the name was wanted: the link takes its place.
    blob.installed()
    unlink(link)
    guard linkat(workingFiles, LocalStore.workingFileName(inode), AT_FDCWD, link, 0) == 0
    else { return nil }
    return KeptAside(path: link)
  }

  /// Makes a replaced file's second name the blob `hash`, once its bytes are checked (nothing
  /// can write the file any more: a path with a writer is never replaced); false when they
  /// are other bytes, and then the name is gone.
  public func install(_ kept: KeptAside, as hash: ContentHash) -> Bool {
    let fd = open(kept.path, O_RDWR | O_CLOEXEC)
    guard fd >= 0 else {
      unlink(kept.path)
      return false
    }
    let blob = IncomingBlob(path: kept.path, descriptor: fd)
    guard ContentFile(descriptor: dup(fd), blobPath: nil).holds(hash) else { return false }
    return (try? install(blob, as: hash)) != nil
  }

  /// Lets go of a replaced file's second name: the replacing rename did not happen.
  public func drop(_ kept: KeptAside) {
    unlink(kept.path)
  }

  /// Makes the working file of `inode` also the blob `hash`, a second name, no copy: its
  /// content stays here when a change replaces the file. False when the blob is there already;
  /// throws when the name cannot be made.
  public func linkAsBlob(workingFile inode: UInt64, as hash: ContentHash) throws(ContentError)
    -> Bool
  {
    let target = path(hash)
    mkdir(String(target.dropLast(hash.hex.count + 1)), 0o700)
    guard linkat(workingFiles, LocalStore.workingFileName(inode), AT_FDCWD, target, 0) == 0
    else {
      if errno == EEXIST { return false }
      throw ContentError(BlobFile.errorText())
    }
    return true
  }

  /// Gives a file a version's modification time (and access time), in nanoseconds since 1970
  /// (before it: negative), rounded toward the past as `timespec` wants.
  static func setTime(_ fd: Int32, _ nanoseconds: Int64) {
    let (seconds, rest) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
    let time =
      rest < 0
      ? timespec(tv_sec: Int(seconds) - 1, tv_nsec: Int(rest + 1_000_000_000))
      : timespec(tv_sec: Int(seconds), tv_nsec: Int(rest))
    _ = futimens(fd, [time, time])
  }
}
