import DocumentModel
import Foundation
import Glibc
import LocalStore
import Testing

@testable import SyncEngine

/// The chunk lists a device keeps beside its content: made as a save is recorded and as
/// content arrives, named by the versions it records, and let go with the content.
@Suite("chunk lists, in process")
struct ChunkListTests {
  @Test func aSaveNamesItsChunksAndAListGoesWithItsContent() async throws {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    let first = String(repeating: "the first text of a long document\n", count: 4000)
    try a.write("doc.txt", first)
    try await a.sync()
    try await b.sync()
    #expect(try b.read("doc.txt") == first)
    let version = try #require(a.engine.versions(of: DocumentPath("doc.txt"))?.current)
    let root = try #require(version.chunks, "a saved file version names its chunk root")
    #expect(root.size == UInt64(first.utf8.count))
    let firstHash = try #require(version.content.blobHash)
    // Both devices keep its list: the writer cut it, the reader rebuilt the file from it.
    for device in [a, b] {
      #expect(try device.store.chunkList(hash: firstHash.bytes) != nil, "\(device)")
    }

    try a.write("doc.txt", first + "one more line\n")
    try await a.sync()
    try await b.sync()
    #expect(try b.read("doc.txt") == first + "one more line\n")
    // The first content is held nowhere now (its working files took the second): its list
    // goes at the next trim, the second's stays.
    let second = try #require(a.engine.versions(of: DocumentPath("doc.txt"))?.current)
    for device in [a, b] {
      device.engine.trimContentCacheIfDue(force: true)
      #expect(try device.store.chunkList(hash: firstHash.bytes) == nil)
      #expect(try device.store.chunkList(hash: second.content.blobHash!.bytes) != nil)
    }
    await a.stop()
    await b.stop()
  }
}
