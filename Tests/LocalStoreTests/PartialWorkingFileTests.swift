import ContentModel
import DocumentModel
import Glibc
import LocalStore
import Testing

/// Partial working files (files on demand): a sparse file of the document's size, chunks
/// written as they arrive, space given back by punching holes, and which chunks are here kept
/// in the state database, trusted only while the file is as it was committed.
@Suite struct PartialWorkingFileTests {
  let folder = makeStateFolder()
  static let time: Int64 = 1_700_000_000_123_456_789

  func chunk(_ count: Int, _ seed: UInt8) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
  }

  func read(_ store: LocalStore, _ inode: UInt64, at offset: Int, _ count: Int) -> [UInt8] {
    let fd = openat(store.workingFiles, LocalStore.workingFileName(inode), O_RDONLY | O_CLOEXEC)
    precondition(fd >= 0)
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0xEE, count: count)
    let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
    return Array(bytes.prefix(max(got, 0)))
  }

  @Test func aPartialFileHasItsSizeTakesOnlyWhatItHoldsAndGivesItBack() throws {
    let store = try LocalStore(directory: folder)
    let content = store.content
    let size: UInt64 = 64 << 20
    let incoming = try content.makePartialWorkingFile(size: size, time: Self.time)
    try content.installIncoming(incoming.name, as: 40)
    // The document's size at once, and next to nothing on the disk.
    var info = stat()
    #expect(fstatat(store.workingFiles, LocalStore.workingFileName(40), &info, 0) == 0)
    #expect(UInt64(info.st_size) == size)
    #expect(try #require(content.allocatedBytes(ofWorkingFile: 40)) < 64 << 10)
    // Two chunks land where they belong; the file's size and time do not move.
    let first = chunk(200_000, 1)
    let second = chunk(100_000, 2)
    try content.writeChunk(first, at: 1 << 20, toWorkingFile: 40)
    try content.writeChunk(second, at: size - 100_000, toWorkingFile: 40)
    let identity = try content.settlePartialWorkingFile(40, time: Self.time)
    #expect(identity.size == Int(size))
    #expect(
      Int64(identity.modificationTime.tv_sec) * 1_000_000_000
        + Int64(identity.modificationTime.tv_nsec) == Self.time)
    #expect(read(store, 40, at: 1 << 20, first.count) == first)
    #expect(read(store, 40, at: Int(size) - 100_000, 100_000) == second)
    let held = try #require(content.allocatedBytes(ofWorkingFile: 40))
    #expect(held >= 300_000 && held < 1 << 20, "\(held)")
    // A chunk past the end is refused and changes nothing.
    #expect(throws: ContentError.self) {
      try content.writeChunk(first, at: size - 10, toWorkingFile: 40)
    }
    #expect(fstatat(store.workingFiles, LocalStore.workingFileName(40), &info, 0) == 0)
    #expect(UInt64(info.st_size) == size)
    // Evicting the first chunk gives its space back and keeps the size.
    try content.punchOut([(1 << 20)..<((1 << 20) + 200_000)], ofWorkingFile: 40, time: Self.time)
    #expect(try #require(content.allocatedBytes(ofWorkingFile: 40)) < held - 150_000)
    #expect(read(store, 40, at: 1 << 20, 16) == [UInt8](repeating: 0, count: 16))
    #expect(fstatat(store.workingFiles, LocalStore.workingFileName(40), &info, 0) == 0)
    #expect(UInt64(info.st_size) == size)
  }

  @Test func presenceIsTrustedOnlyWhileTheFileIsAsItWasCommitted() throws {
    let store = try LocalStore(directory: folder)
    let content = store.content
    let incoming = try content.makePartialWorkingFile(size: 1 << 20, time: Self.time)
    try content.installIncoming(incoming.name, as: 41)
    try content.writeChunk(chunk(65_536, 3), at: 0, toWorkingFile: 41)
    let identity = try content.settlePartialWorkingFile(41, time: Self.time)
    var presence = ContentPresence(count: 16)
    presence.insert(0)
    let hash = [UInt8](repeating: 7, count: 32)
    let root = [UInt8](repeating: 9, count: 45)
    try store.storePresence(
      inode: 41, hash: hash, root: root, presence: presence.encoded(), identity: identity)
    let kept = try #require(try store.presence(inode: 41, identity: identity))
    #expect(kept.hash == hash && kept.root == root)
    #expect(try ContentPresence(decoding: kept.presence) == presence)
    // What the next mount finds after a crash: the committed row, the same file.
    let copy = try openCrashCopy(of: folder)
    #expect(try copy.presence(inode: 41, identity: identity) != nil)

    // A chunk written after the commit (a crash before the next one): the file is in another
    // state, so none of its bytes are trusted and the row must be made again.
    try content.writeChunk(chunk(65_536, 4), at: 65_536, toWorkingFile: 41)
    let now = try content.settlePartialWorkingFile(41, time: Self.time)
    #expect(now != identity)
    #expect(try store.presence(inode: 41, identity: now) == nil)
    try store.removePresence(inode: 41)
    #expect(try store.presence(inode: 41, identity: identity) == nil)
  }
}
