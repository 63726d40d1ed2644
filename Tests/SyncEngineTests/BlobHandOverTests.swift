import DocumentModel
import Foundation
import Glibc
import Hub
import SyncEngine
import Testing

/// A save's blob handed to the SQLite hub by rename when the device would drop it right after
/// the upload: moved, not copied, recorded and checked on the hub, and the device's
/// bookkeeping as after the drop (the content kept once, in the working file).
@Suite("blob hand-over to the hub, in process")
struct BlobHandOverTests {
  @Test func aSavedLargeFileMovesToTheHubInsteadOfBeingCopied() async throws {
    let library = Library()
    let a = try library.device("a", chunks: false)
    let b = try library.device("b", chunks: false)
    // Paused, the engine still records the save (its blob) but does not push it yet.
    a.engine.pause()
    let first = Self.largeText(seed: 1)
    try a.write("big.txt", first)
    let local = blobPath(library, "a", first)
    let inode = try #require(await waitForInode(local))
    a.engine.resume()
    try await a.sync()

    let onHub = hubBlobPath(library, first)
    #expect(Self.inode(onHub) == inode, "the hub's file is not the blob the device wrote")
    #expect(Self.inode(local) == nil, "the device keeps a second copy of the saved content")
    #expect(try a.read("big.txt") == first)
    #expect(a.engine.status().pendingUploads == 0)
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    let hash = Array(ContentHash(of: Array(first.utf8)).bytes)
    #expect(try await hub.hasBlob(hash: hash))
    try await b.sync()
    #expect(try b.read("big.txt") == first)

    // Edited in place later, the file's earlier content stays on the hub, whole.
    let second = Self.largeText(seed: 2)
    try a.write("big.txt", second)
    try await a.sync()
    try await b.sync()
    #expect(try b.read("big.txt") == second)
    #expect(Self.sha256(of: onHub) == hash)
    await a.stop()
    await b.stop()
  }

  /// Content whose blob must stay here (the pattern file's, read as the engine decides) is
  /// copied to the hub, never moved.
  @Test func contentThatMustStayIsCopiedNotMoved() async throws {
    let library = Library()
    let a = try library.device("a", chunks: false)
    a.engine.pause()
    let patterns = Self.largeText(seed: 3)
    try a.write(".docsyncignore", patterns)
    let local = blobPath(library, "a", patterns)
    let inode = try #require(await waitForInode(local))
    a.engine.resume()
    try await a.sync()
    #expect(Self.inode(local) == inode, "the pattern file's blob left the device")
    let onHub = Self.inode(hubBlobPath(library, patterns))
    #expect(onHub != nil && onHub != inode, "the hub has no copy of its own")
    await a.stop()
  }

  /// 320 KiB of comment lines that differ by seed: above the size the SQLite hub keeps in its
  /// file, and a pattern file that ignores nothing.
  static func largeText(seed: UInt64) -> String {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    var bytes = [UInt8](repeating: UInt8(ascii: "\n"), count: 320 << 10)
    for index in bytes.indices where index % 64 != 63 {
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      bytes[index] =
        index % 64 == 0
        ? UInt8(ascii: "#") : UInt8(ascii: "a") + UInt8(truncatingIfNeeded: state % 26)
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  private func blobPath(_ library: Library, _ device: String, _ text: String) -> String {
    let hex = ContentHash(of: Array(text.utf8)).hex
    return "\(library.folder)/\(device)/blobs/\(hex.prefix(2))/\(hex)"
  }

  private func hubBlobPath(_ library: Library, _ text: String) -> String {
    "\(library.folder)/hub.sqlite.blobs/\(ContentHash(of: Array(text.utf8)).hex)"
  }

  /// The inode of the file at `path` once it shows (within 10 s), nil when it does not.
  private func waitForInode(_ path: String) async throws -> UInt? {
    for _ in 0..<1000 {
      if let inode = Self.inode(path) { return inode }
      try await Task.sleep(for: .milliseconds(10))
    }
    return nil
  }

  static func inode(_ path: String) -> UInt? {
    var info = stat()
    return stat(path, &info) == 0 ? info.st_ino : nil
  }

  static func sha256(of path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { HubHash.sha256($0) }
  }
}
