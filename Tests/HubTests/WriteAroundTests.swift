import Crypto
import Foundation
import Glibc
import Testing

@testable import Hub

/// Large blobs that arrive from a SQLite hub are written around the page cache (O_DIRECT), so
/// that a 1 GiB pull neither takes a GiB of the device's memory nor dirties as much; whatever
/// cannot go around (a tail that is not a whole page, memory or offsets off a page, a file
/// system without direct I/O) goes through the cache, and the bytes are the same either way.
@Suite("Writing large blobs around the page cache")
struct WriteAroundTests {
  static let page = 4096

  /// The blob comes whole into the caller's file, the chunks that could go straight to the
  /// disk are not in the cache afterwards, and the descriptor is given back as it came.
  @Test(arguments: [8 << 20, (9 << 20) + 4097, (8 << 20) + 3 * page])
  func aLargeBlobArrivesAroundThePageCache(size: Int) async throws {
    let folder = try ScratchFolder()
    let hub = try SQLiteHub(path: folder.path + "/hub.sqlite")
    let bytes = pseudoRandomBytes(count: size, seed: UInt64(size))
    let hash = try await putBlob(hub, bytes)
    let fd = open(folder.path + "/arrived", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    try #require(fd >= 0)
    defer { close(fd) }
    let flags = fcntl(fd, F_GETFL)

    try await hub.fetchBlob(hash: hash, to: fd)

    #expect(fcntl(fd, F_GETFL) == flags)
    // Chunks of writeAroundStep go around the cache; only a tail that is not a whole number
    // of pages goes through it. (Before the bytes are read back, which caches them.)
    let tail = size % BlobFile.writeAroundStep
    let cachedAtMost = tail % Self.page == 0 ? 0 : (tail + Self.page - 1) / Self.page
    #expect(try Self.residentPages(fd, size: size) <= cachedAtMost)
    #expect(try fileContents(fd) == bytes)
    // The hub's own file was read once and dropped from the cache behind the reader.
    let hubFile = open(folder.path + "/hub.sqlite.blobs/" + hexString(hash), O_RDONLY | O_CLOEXEC)
    try #require(hubFile >= 0)
    defer { close(hubFile) }
    #expect(try Self.residentPages(hubFile, size: size) == 0)
  }

  /// A write that fails on the writer's thread fails the copy, with every buffer given back
  /// (a semaphore left below its first value would trap in libdispatch).
  @Test func aFailedWriteFailsTheCopy() throws {
    let folder = try ScratchFolder()
    let size = (9 << 20) + 1
    let sourcePath = folder.path + "/source"
    #expect(
      FileManager.default.createFile(
        atPath: sourcePath, contents: Data(pseudoRandomBytes(count: size, seed: 6))))
    let source = open(sourcePath, O_RDONLY | O_CLOEXEC)
    try #require(source >= 0)
    defer { close(source) }
    // Read-only: every write fails (EBADF), on the writer's thread.
    let destination = open(sourcePath, O_RDONLY | O_CLOEXEC)
    try #require(destination >= 0)
    defer { close(destination) }
    var hasher: SHA256? = SHA256()
    var offset: Int64 = 0
    let error = #expect(throws: HubError.self) {
      try BlobFile.copy(
        from: source, to: destination, at: &offset, hasher: &hasher, owners: (.hub, .caller))
    }
    // The destination is the caller's: its failure is the caller's, not the hub's.
    guard case .local(let reason)? = error else {
      Issue.record("not a local failure: \(String(describing: error))")
      return
    }
    #expect(reason.contains("Bad file descriptor"), "\(reason)")
    #expect(offset < size)
  }

  /// A damaged byte in a large blob's file on the hub is caught on the way, as for any blob.
  @Test func aDamagedLargeBlobIsRefused() async throws {
    let folder = try ScratchFolder()
    let hubPath = folder.path + "/hub.sqlite"
    let hub = try SQLiteHub(path: hubPath)
    let size = (9 << 20) + 4097
    let hash = try await putBlob(hub, pseudoRandomBytes(count: size, seed: 5))
    let handle = try #require(FileHandle(forUpdatingAtPath: hubPath + ".blobs/" + hexString(hash)))
    try handle.seek(toOffset: UInt64(5 << 20))
    try handle.write(contentsOf: [0x55])
    try handle.close()
    await #expect {
      _ = try await fetchBlob(hub, hash)
    } throws: { isIntegrityError($0) }
  }

  /// A write that cannot go straight to the disk turns direct writes off for the descriptor
  /// and goes through the cache; aligned writes before it went around.
  @Test func aWriteOffThePageGoesThroughTheCache() throws {
    let folder = try ScratchFolder()
    let fd = open(folder.path + "/file", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    try #require(fd >= 0)
    defer { close(fd) }
    #expect(!BlobFile.writeAround(fd, size: BlobFile.writeAroundThreshold - 1))
    #expect(!BlobFile.writesAround(fd))
    // The scratch folder is on ext4, which has direct I/O: a refusal here is a failure.
    #expect(BlobFile.writeAround(fd, size: BlobFile.writeAroundThreshold))

    let buffer = UnsafeMutableRawBufferPointer.allocate(
      byteCount: 3 * Self.page, alignment: Self.page)
    defer { buffer.deallocate() }
    for index in buffer.indices { buffer[index] = UInt8(truncatingIfNeeded: index &* 7) }
    try BlobFile.write(fd, UnsafeRawBufferPointer(rebasing: buffer[0..<Self.page]), at: 0, of: .hub)
    #expect(BlobFile.writesAround(fd))
    #expect(try Self.residentPages(fd, size: Self.page) == 0)

    // Memory off a page boundary.
    let offPage = UnsafeRawBufferPointer(rebasing: buffer[16..<(16 + Self.page)])
    try BlobFile.write(fd, offPage, at: Int64(Self.page), of: .hub)
    #expect(!BlobFile.writesAround(fd))
    try BlobFile.write(fd, [1, 2, 3], at: Int64(2 * Self.page), of: .hub)

    var expected = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<Self.page]))
    expected += Array(offPage)
    expected += [1, 2, 3]
    #expect(try fileContents(fd) == expected)
  }

  /// How many of the file's first `size` bytes' pages are in the page cache (mincore of a
  /// mapping, which does not read them in).
  static func residentPages(_ fd: Int32, size: Int) throws -> Int {
    guard let mapping = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), mapping != MAP_FAILED
    else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { munmap(mapping, size) }
    var vector = [UInt8](repeating: 0, count: (size + page - 1) / page)
    guard mincore(mapping, size, &vector) == 0 else {
      throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
    return vector.filter { $0 & 1 != 0 }.count
  }
}
