import Crypto
import Foundation
import Glibc

/// The local file side of a blob transfer, shared by every hub: chunks read from and written
/// to a descriptor at explicit offsets, whatever the descriptor's own position.
public enum BlobFile {
  /// Whose file a descriptor is. A failed read or write of the hub's own file is the hub's
  /// failure; of the caller's file (the content it puts, the file a fetch fills) it is the
  /// caller's, ``HubError/local(_:)``: a full disk on a device is not an unreachable hub.
  public enum Owner: Sendable {
    case hub
    case caller
  }

  /// The error for a read or write of `owner`'s file that failed with the current `errno`.
  static func failure(to verb: String, _ owner: Owner) -> HubError {
    switch owner {
    case .hub: .failed("cannot \(verb) the blob's file: \(errorText())")
    case .caller: .local("cannot \(verb) a file on this device: \(errorText())")
    }
  }

  /// Reads up to `count` bytes at `offset`, fewer only at the end of the file.
  public static func readChunk(
    _ fd: Int32, at offset: Int64, count: Int, after prefix: [UInt8] = [], of owner: Owner
  ) throws(HubError) -> [UInt8] {
    // Read straight into the array, after `prefix`: neither zeroed first nor copied after,
    // which was a tenth of a chunked pull's processor time.
    var failed = false
    let buffer = [UInt8](unsafeUninitializedCapacity: prefix.count + count) { bytes, initialized in
      for (index, byte) in prefix.enumerated() { bytes[index] = byte }
      let start = bytes.baseAddress! + prefix.count
      var filled = 0
      while filled < count {
        let got = pread(fd, start + filled, count - filled, off_t(offset) + off_t(filled))
        if got < 0 {
          if errno == EINTR { continue }
          failed = true
          break
        }
        if got == 0 { break }
        filled += got
      }
      initialized = prefix.count + filled
    }
    if failed { throw failure(to: "read", owner) }
    return buffer
  }

  /// Writes all of `data` at `offset`, and starts the disk on as many bytes before it (see
  /// ``startWriteback(_:before:count:)``). On a descriptor that ``writeAround(_:size:)`` set
  /// up, aligned chunks go straight to the disk; the first one that is not aligned (the
  /// file's tail), or that the file system refuses, turns that off and goes through the cache.
  public static func write(
    _ fd: Int32, _ data: some ContiguousBytes, at offset: Int64, of owner: Owner
  ) throws(HubError) {
    var failed: HubError?
    data.withUnsafeBytes { bytes in
      var direct = writesAround(fd)
      if direct && !isAligned(bytes, at: offset) { direct = !stopWritingAround(fd) }
      if !direct { startWriteback(fd, before: offset, count: bytes.count) }
      var written = 0
      while written < bytes.count {
        let put = pwrite(
          fd, bytes.baseAddress! + written, bytes.count - written,
          off_t(offset) + off_t(written))
        if put < 0 {
          if errno == EINTR { continue }
          // A file system may want a larger alignment than a page, or none of it at all.
          if errno == EINVAL && direct {
            direct = !stopWritingAround(fd)
            if !direct { continue }
          }
          failed = Self.failure(to: "write", owner)
          return
        }
        written += put
      }
    }
    if let failed { throw failed }
  }

  /// Bytes copied per step through the cache: large enough that a system call and a hash
  /// update are a small part of each, small enough to stay in the CPU's caches.
  public static let copyStep = 1 << 20

  /// Copies from `offset` to the end of `source` into `destination` (when given) at the same
  /// offsets, hashing on the way when there is a hasher; `offset` ends at the source's size.
  /// A large copy goes around the page cache (``writeAround(_:size:)``); `destination`'s
  /// flags are as they came when it returns (a direct descriptor refuses unaligned reads).
  /// `owners` says whose file each end is.
  ///
  /// `observe`, when given, sees every byte after the hasher, in order (a chunker).
  public static func copy(
    from source: Int32, to destination: Int32?, at offset: inout Int64, hasher: inout SHA256?,
    readOnce: Bool = false, owners: (source: Owner, destination: Owner),
    observe: ((UnsafeRawBufferPointer) -> Void)? = nil
  ) throws(HubError) {
    var info = stat()
    let left = fstat(source, &info) == 0 ? Int64(info.st_size) - offset : -1
    var around = false
    if let destination { around = writeAround(destination, size: left) }
    defer { if around, let destination { stopWritingAround(destination) } }
    if around, let destination {
      try copyAround(
        from: source, to: destination, at: &offset, hasher: &hasher, readOnce: readOnce,
        owners: owners, observe: observe)
      return
    }
    // No larger than the file: a buffer of a MiB for each of 10,000 small files was a
    // twentieth of a push's CPU.
    let capacity = left >= 0 ? Int(min(max(left, 4095) + 1, Int64(copyStep))) : copyStep
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 4096)
    defer { buffer.deallocate() }
    while true {
      let got = try read(source, into: buffer, at: offset, once: readOnce, of: owners.source)
      if got == 0 { return }
      let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<got])
      hasher?.update(bufferPointer: bytes)
      observe?(bytes)
      if let destination { try write(destination, bytes, at: offset, of: owners.destination) }
      offset += Int64(got)
    }
  }

  /// ``copy(from:to:at:hasher:readOnce:)`` into a descriptor that writes around the cache:
  /// the disk takes one chunk while the next is read and hashed (a new device's initial sync of
  /// 1 GiB as `docsync-user`: 2.5 s with reads, hashes and writes in turn, 2.1 s with this
  /// writer; the disk alone writes 1 GiB in about 0.9 s).
  private static func copyAround(
    from source: Int32, to destination: Int32, at offset: inout Int64, hasher: inout SHA256?,
    readOnce: Bool, owners: (source: Owner, destination: Owner),
    observe: ((UnsafeRawBufferPointer) -> Void)?
  ) throws(HubError) {
    let buffers = (0..<ChunkWriter.buffers).map { _ in
      UnsafeMutableRawBufferPointer.allocate(byteCount: writeAroundStep, alignment: 4096)
    }
    let writer = ChunkWriter(destination, of: owners.destination)
    // Every write given is done before its buffer goes, also when a read fails.
    defer {
      try? writer.finish()
      for buffer in buffers { buffer.deallocate() }
    }
    var index = 0
    while true {
      writer.waitForBuffer()
      if let error = writer.error { throw error }
      let buffer = buffers[index % buffers.count]
      let got = try read(source, into: buffer, at: offset, once: readOnce, of: owners.source)
      if got == 0 { break }
      let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<got])
      if let observe, hasher != nil {
        hashAndObserve(bytes, hasher: &hasher, observe: observe)
      } else {
        hasher?.update(bufferPointer: bytes)
        observe?(bytes)
      }
      writer.write(bytes, at: offset)
      offset += Int64(got)
      index += 1
    }
    try writer.finish()
  }

  /// SHA-256 of `bytes` on this thread and `observe` (a device cutting content into chunks and
  /// naming them) on another, at once: a large file's record is two passes of about the same
  /// cost over each 4 MiB buffer, and one after the other they left the second core idle
  /// while a save waited. Both are done when this returns.
  private static func hashAndObserve(
    _ bytes: UnsafeRawBufferPointer, hasher: inout SHA256?,
    observe: (UnsafeRawBufferPointer) -> Void
  ) {
    // Each side touches only its own state, and both end before this returns.
    nonisolated(unsafe) let bytes = bytes
    nonisolated(unsafe) var digest = hasher
    nonisolated(unsafe) let observe = observe
    DispatchQueue.concurrentPerform(iterations: 2) { side in
      if side == 0 {
        digest?.update(bufferPointer: bytes)
      } else {
        observe(bytes)
      }
    }
    hasher = digest
  }

  /// Reads up to the buffer's size at `offset`, fewer only at the end of the file. With
  /// `once`, the pages read are dropped from the cache behind the reader: a hub's blob read
  /// for a fetch is not read again soon, and its pages are better spent on the next chunk's
  /// read-ahead than on keeping it (on this virtual machine, pages the kernel has just freed
  /// also cost no host fault when they are taken again: see ``writeAroundThreshold``).
  private static func read(
    _ source: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, once: Bool,
    of owner: Owner
  ) throws(HubError) -> Int {
    defer {
      if once { _ = posix_fadvise(source, off_t(offset), off_t(buffer.count), POSIX_FADV_DONTNEED) }
    }
    var filled = 0
    while filled < buffer.count {
      let got = pread(
        source, buffer.baseAddress! + filled, buffer.count - filled, off_t(offset) + off_t(filled))
      if got < 0 {
        if errno == EINTR { continue }
        throw failure(to: "read", owner)
      }
      if got == 0 { break }
      filled += got
    }
    return filled
  }

  /// How many bytes the open file `fd` holds and their SHA-256, read from offset 0.
  public static func digest(of fd: Int32, _ owner: Owner) throws(HubError) -> (
    size: Int64, digest: [UInt8]
  ) {
    var hasher: SHA256? = SHA256()
    var offset: Int64 = 0
    try copy(from: fd, to: nil, at: &offset, hasher: &hasher, owners: (owner, owner))
    return (offset, Array(hasher!.finalize()))
  }

  /// Blobs at least this large are written around the page cache. A page-cache write of 1 GiB
  /// takes a GiB of memory that nobody reads soon, and dirties as much, which the kernel then
  /// throttles every writer of the disk on; on this virtual machine each of those new pages also
  /// cost the host a fault when its memory had been reported free (a 1 GiB pull spent 72% of
  /// its CPU in the copy into new pages, 2.5 s). Below it, a file is written in one or a few
  /// chunks and is likely to be read soon: the cache is the better place.
  public static let writeAroundThreshold: Int64 = 8 << 20

  /// Bytes written per step around the cache: each write waits for the disk, so fewer, larger
  /// ones keep it busy (dd of 1 GiB with O_DIRECT here: 0.86–0.91 s in 1 MiB writes, 0.65–0.97 s
  /// in 4 MiB ones).
  public static let writeAroundStep = 4 << 20

  /// Asks that the writes of `size` bytes into `fd` go straight to the disk (O_DIRECT), when
  /// `size` reaches ``writeAroundThreshold``; returns whether they will. A file system without
  /// direct I/O refuses, and the writes stay cached. The caller still fsyncs the file: that
  /// writes the tail and the file's metadata, and flushes the disk's cache.
  @discardableResult
  public static func writeAround(_ fd: Int32, size: Int64) -> Bool {
    guard size >= writeAroundThreshold, directFlag != 0 else { return false }
    let flags = fcntl(fd, F_GETFL)
    guard flags >= 0 else { return false }
    return fcntl(fd, F_SETFL, flags | directFlag) == 0
  }

  /// O_DIRECT, which Swift's Glibc module does not import; its value differs between
  /// architectures (asm-generic/fcntl.h and the architectures' own), 0 where unknown here.
  #if arch(x86_64) || arch(i386)
    static let directFlag: Int32 = 0o40000
  #elseif arch(arm64) || arch(arm)
    static let directFlag: Int32 = 0o200000
  #else
    static let directFlag: Int32 = 0
  #endif

  static func writesAround(_ fd: Int32) -> Bool {
    guard directFlag != 0 else { return false }
    let flags = fcntl(fd, F_GETFL)
    return flags >= 0 && flags & directFlag != 0
  }

  /// Turns direct writes off for `fd`; returns whether they are off.
  @discardableResult
  public static func stopWritingAround(_ fd: Int32) -> Bool {
    let flags = fcntl(fd, F_GETFL)
    return flags >= 0 && fcntl(fd, F_SETFL, flags & ~directFlag) == 0
  }

  /// Whether a direct write of `bytes` at `offset` meets the alignment every Linux file system
  /// with direct I/O accepts: memory, offset and length on 4 KiB.
  static func isAligned(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
    let page = 4096
    guard let base = bytes.baseAddress else { return false }
    return Int(bitPattern: base) % page == 0 && offset % Int64(page) == 0
      && bytes.count % page == 0
  }

  /// Starts writing to disk the `count` bytes before `offset`, which the caller wrote a moment
  /// ago and will fsync at the end, so that the disk works while the next chunks are copied and
  /// the final fsync has little left to do.
  ///
  /// Linux writes dirty pages back on its own only past 10% of memory: a 1 GiB file went to
  /// disk all at once in the fsync, after its last byte was copied. sync_file_range is not
  /// imported into Swift; POSIX_FADV_DONTNEED starts the same writeback (PostgreSQL's
  /// pg_flush_data falls back to it), and drops only pages already clean, which bytes written
  /// one chunk ago are not yet.
  public static func startWriteback(_ fd: Int32, before offset: Int64, count: Int) {
    let start = max(0, offset - Int64(count))
    guard offset > start else { return }
    _ = posix_fadvise(fd, off_t(start), off_t(offset - start), POSIX_FADV_DONTNEED)
  }

  /// The text of the current `errno`.
  public static func errorText() -> String {
    String(cString: strerror(errno))
  }
}
