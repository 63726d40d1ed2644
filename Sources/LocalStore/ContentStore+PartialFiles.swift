import Glibc
import Hub

/// Working files that hold part of their content (files on demand, `docs/on-demand.md`): a
/// sparse file of the document's size, whose chunks are written at their offsets as they
/// arrive and given back by punching holes. Which chunks a file holds is kept in the state
/// database (``LocalStore/storePresence(inode:hash:root:presence:identity:)``), committed only
/// after ``settlePartialWorkingFile(_:time:)`` made the bytes durable.
///
/// Not used by a mount yet: every document is still whole on every device.
extension ContentStore {
  /// FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, from <linux/falloc.h>.
  static let punchHole: Int32 = 0x01 | 0x02

  /// A new working file of `size` bytes holding none of them yet (a hole), with the version's
  /// time `time` (nanoseconds): what lands for a document whose content is not here.
  public func makePartialWorkingFile(size: UInt64, time: Int64) throws(ContentError) -> Incoming {
    guard size <= UInt64(Int64.max), let (name, fd) = createIncomingFile() else {
      throw ContentError("cannot make a working file: \(BlobFile.errorText())")
    }
    defer { close(fd) }
    guard ftruncate(fd, off_t(size)) == 0 else {
      let reason = BlobFile.errorText()
      removeIncomingFile(name)
      throw ContentError("cannot size a working file to \(size) bytes: \(reason)")
    }
    Self.setTime(fd, time)
    return Incoming(name: name, fromBlob: nil)
  }

  /// Writes the bytes of a chunk (checked by the caller against its id) at `offset` of the
  /// working file of `inode`. The file's size never changes: a chunk past its end is refused.
  public func writeChunk(_ bytes: [UInt8], at offset: UInt64, toWorkingFile inode: UInt64)
    throws(ContentError)
  {
    let fd = openat(workingFiles, LocalStore.workingFileName(inode), O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ContentError("cannot open a working file: \(BlobFile.errorText())") }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0,
      offset <= UInt64(info.st_size), UInt64(bytes.count) <= UInt64(info.st_size) - offset
    else {
      throw ContentError("a chunk of \(bytes.count) bytes at \(offset) lies outside its file")
    }
    let done = bytes.withUnsafeBytes { Self.writeAll($0, to: fd, at: Int64(offset)) }
    guard done == bytes.count else {
      throw ContentError("cannot write a chunk into a working file: \(BlobFile.errorText())")
    }
  }

  /// Makes the chunks written into the working file of `inode` durable and puts the version's
  /// time `time` back; returns the file's identity, which its presence is recorded with (a
  /// restart trusts the presence only while the file is still in that state).
  public func settlePartialWorkingFile(_ inode: UInt64, time: Int64) throws(ContentError)
    -> BlobIdentity
  {
    let fd = openat(workingFiles, LocalStore.workingFileName(inode), O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ContentError("cannot open a working file: \(BlobFile.errorText())") }
    defer { close(fd) }
    Self.setTime(fd, time)
    var info = stat()
    guard fdatasync(fd) == 0, fstat(fd, &info) == 0 else {
      throw ContentError("cannot make a working file durable: \(BlobFile.errorText())")
    }
    return BlobIdentity(info)
  }

  /// Gives back the space of `ranges` of the working file of `inode` (eviction), keeping its
  /// size and time: the ranges read as zeros, which its presence says are not content.
  public func punchOut(_ ranges: [Range<UInt64>], ofWorkingFile inode: UInt64, time: Int64)
    throws(ContentError)
  {
    let fd = openat(workingFiles, LocalStore.workingFileName(inode), O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ContentError("cannot open a working file: \(BlobFile.errorText())") }
    defer { close(fd) }
    for range in ranges where !range.isEmpty {
      guard range.upperBound <= UInt64(Int64.max),
        LinuxCalls.fallocate(fd, Self.punchHole, Int64(range.lowerBound), Int64(range.count)) == 0
      else {
        throw ContentError("cannot give back the space of a working file: \(BlobFile.errorText())")
      }
    }
    Self.setTime(fd, time)
  }

  /// The bytes the working file of `inode` takes on the disk (its blocks): what a budget
  /// counts, and what `st_blocks` reports for a partial file.
  public func allocatedBytes(ofWorkingFile inode: UInt64) -> UInt64? {
    var info = stat()
    guard fstatat(workingFiles, LocalStore.workingFileName(inode), &info, 0) == 0 else {
      return nil
    }
    return UInt64(info.st_blocks) * 512
  }
}
