import DocumentFileSystem
import Glibc
import LocalStore
import SystemPackage
import Testing

/// A stream of large writes through the mount starts the disk on each 8 MiB window it leaves
/// behind (issue 17: the ordinary user's sequential writes), and nothing else does.
@Suite struct StreamingWritebackTests {
  let folder = temporaryFolder()
  let me = Caller(uid: 1000, gid: 1000)
  let mebibyte = 1 << 20
  var window: Int64 { Writeback.window }

  @Test func aWindowStartsOnceALargeWriteGoesPastIt() {
    let large = Writeback.minimumWrite
    let mib = mebibyte
    // In page-aligned 1 MiB writes: the write that ends on 8 MiB starts nothing, the next one
    // starts the first window, the ones after it nothing until 16 MiB is passed.
    #expect(Writeback.completedWindow(offset: window - Int64(mib), count: mib) == nil)
    #expect(Writeback.completedWindow(offset: window, count: mib) == 0..<window)
    #expect(Writeback.completedWindow(offset: window + Int64(mib), count: mib) == nil)
    #expect(
      Writeback.completedWindow(offset: 2 * window, count: mib) == window..<(2 * window))
    // A writer's buffer 16 bytes past a page: 256 pages, then 16 bytes, for each 1 MiB.
    #expect(Writeback.completedWindow(offset: window - 16, count: 16) == nil)
    #expect(Writeback.completedWindow(offset: window, count: mib - 16) == 0..<window)
    // One write across a boundary starts the window it left.
    #expect(Writeback.completedWindow(offset: window - 4096, count: large) == 0..<window)
    // Small writes never; nothing before the first window is complete.
    #expect(Writeback.completedWindow(offset: window, count: large - 1) == nil)
    #expect(Writeback.completedWindow(offset: 0, count: 4 * mib) == nil)
  }

  /// ext4 gives a written range its blocks when it starts writing it back (until then the
  /// range is delayed allocation), so FIEMAP shows which bytes are on their way to the disk.
  /// A file of small writes, written first and looked at last, shows whether anything else
  /// flushed the file system meanwhile (tests in this process call syncfs): then the round is
  /// taken again.
  @Test func aStreamOfLargeWritesIsOnItsWayToTheDiskBehindTheWriter() throws {
    let fs = try DocumentFileSystem(store: LocalStore(directory: folder), owner: me)
    defer { fs.shutdown() }
    let chunk = [UInt8](repeating: 0x5A, count: mebibyte)
    var undisturbed = false
    for round in 0..<5 where !undisturbed {
      let root = DocumentFileSystem.rootInode
      let (_, trickle) = try fs.create(
        parent: root, name: bytes("trickle\(round).bin"), mode: 0o644, flags: O_WRONLY,
        caller: me)
      let (_, stream) = try fs.create(
        parent: root, name: bytes("stream\(round).bin"), mode: 0o644, flags: O_WRONLY,
        caller: me)
      defer {
        fs.release(handle: stream.handle)
        fs.release(handle: trickle.handle)
      }
      // 12 MiB, 64 KiB at a time: not a stream of large writes.
      for step in 0..<(12 * 16) {
        #expect(try put(fs, trickle, chunk[..<(64 << 10)], at: Int64(step << 16)) == 64 << 10)
      }
      // 12 MiB as a writer with an unaligned buffer sends it: 1 MiB less 16 bytes, then 16.
      for step in 0..<12 {
        let offset = Int64(step * mebibyte)
        let head = mebibyte - 16
        #expect(try put(fs, stream, chunk[..<head], at: offset) == head)
        #expect(try put(fs, stream, chunk[head...], at: offset + Int64(head)) == 16)
      }
      let streamed = try delayedBytes(stream.descriptor)
      let trickled = try delayedBytes(trickle.descriptor)
      if trickled.total < 12 << 20 { continue }
      undisturbed = true
      #expect(streamed.before8MiB == 0, "the first window is on its way to the disk")
      #expect(streamed.total == 4 << 20, "the last 4 MiB wait for writeback or an fsync")
      try fs.synchronize(handle: stream.handle, dataOnly: false)
      #expect(try delayedBytes(stream.descriptor).total == 0)
    }
    #expect(
      undisturbed,
      """
      five rounds found the small writes' file written back before their look: the state \
      folder's file system does not delay allocation (ext4 does, as on the test machines), \
      or something flushed it every time
      """)
  }

  func put(_ fs: DocumentFileSystem, _ file: OpenFile, _ bytes: ArraySlice<UInt8>, at offset: Int64)
    throws -> Int
  {
    try bytes.withUnsafeBytes { raw throws(Errno) in
      try fs.write(handle: file.handle, data: raw, offset: offset)
    }
  }

  /// The bytes of a file still in delayed allocation: all of them, and those below 8 MiB.
  func delayedBytes(_ fd: Int32) throws -> (total: Int64, before8MiB: Int64) {
    let extentCount = 64
    let headerSize = 32
    let extentSize = 56
    let buffer = UnsafeMutableRawPointer.allocate(
      byteCount: headerSize + extentCount * extentSize, alignment: 8)
    defer { buffer.deallocate() }
    buffer.initializeMemory(
      as: UInt8.self, repeating: 0, count: headerSize + extentCount * extentSize)
    // struct fiemap: fm_start, fm_length, fm_flags, fm_mapped_extents, fm_extent_count, ...
    buffer.storeBytes(of: UInt64(0), toByteOffset: 0, as: UInt64.self)
    buffer.storeBytes(of: UInt64.max, toByteOffset: 8, as: UInt64.self)
    buffer.storeBytes(of: UInt32(extentCount), toByteOffset: 24, as: UInt32.self)
    let fiemap: UInt = 0xC020_660B  // FS_IOC_FIEMAP
    guard ioctl(fd, fiemap, buffer) == 0 else { throw Errno(rawValue: errno) }
    let mapped = Int(buffer.load(fromByteOffset: 20, as: UInt32.self))
    var total: Int64 = 0
    var before: Int64 = 0
    for index in 0..<min(mapped, extentCount) {
      let extent = buffer + headerSize + index * extentSize
      let logical = Int64(extent.load(fromByteOffset: 0, as: UInt64.self))
      let length = Int64(extent.load(fromByteOffset: 16, as: UInt64.self))
      let flags = extent.load(fromByteOffset: 40, as: UInt32.self)
      let delayed: UInt32 = 0x4  // FIEMAP_EXTENT_DELALLOC
      guard flags & delayed != 0 else { continue }
      total += length
      before += max(0, min(logical + length, window) - logical)
    }
    return (total, before)
  }
}
