import DocumentFileSystem
import DocumentModel
import Foundation
import Glibc
import SyncEngine
import Testing

/// A local blob damaged by one flipped byte (DESIGN.md §2, invariant 5): a conflict version
/// that uses it reads as the right bytes or as an error, never as wrong bytes, and the blob is
/// fetched again.
@Suite("damaged blobs, in process")
struct DamagedBlobTests {
  @Test func aConflictVersionWithADamagedBlobNeverReadsWrongAndComesBack() async throws {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    try a.write("doc.txt", "base\n")
    try await a.sync()
    try await b.sync()
    b.engine.pause()
    try a.write("doc.txt", "A's edit, the older one\n")
    try await a.sync()
    try await Task.sleep(for: .milliseconds(20))
    try b.write("doc.txt", "B's edit, the later one\n")
    try await Task.sleep(for: .milliseconds(300))  // recorded after the quiet moment
    b.engine.resume()
    try await b.sync()
    try await a.sync()
    let names = try b.versions("doc.txt")
    #expect(names.count == 1)
    let name = try #require(names.first)
    let version = ".versions/doc.txt/" + name
    let good = "A's edit, the older one\n"
    #expect(try b.read(version) == good)

    // One flipped byte in B's blob of that content, in place, as a disk error would.
    let hex = ContentHash(of: Array(good.utf8)).hex
    let blob = "\(library.folder)/b/blobs/\(hex.prefix(2))/\(hex)"
    let fd = open(blob, O_WRONLY)
    #expect(fd >= 0)
    #expect(pwrite(fd, "a", 1, 0) == 1)
    close(fd)

    switch Result(catching: { try b.read(version) }) {
    case .success(let text): #expect(text == good, "a damaged blob read as wrong bytes")
    case .failure: break  // an error is what a damaged blob may give
    }
    try await b.sync()
    #expect(try b.read(version) == good)
    #expect(FileManager.default.fileExists(atPath: blob))
    await a.stop()
    await b.stop()
  }
}

/// A blob damaged in the hub, by one flipped byte: the device that fetches it reports it, the
/// hub drops its copy, a device that has the content puts it again, and until then the path
/// keeps its last good content and the status says why.
@Suite("damaged hub blobs, in process")
struct DamagedHubBlobTests {
  @Test func aDamagedHubBlobIsPutAgainByTheDeviceThatHasIt() async throws {
    let library = Library()
    let a = try library.device("a", chunks: false)
    let b = try library.device("b", chunks: false)
    try a.write("doc.txt", "first\n")
    try await a.sync()
    try await b.sync()
    // B must not fetch the new content before it is damaged.
    b.engine.pause()
    let good = "second, damaged on the hub\n"
    try a.write("doc.txt", good)
    try await a.sync()
    // A holds the only good copy and is paused: nobody can put it again yet.
    a.engine.pause()
    let hash = ContentHash(of: Array(good.utf8)).hex
    var flipped = Array(good.utf8)
    flipped[0] ^= 0x20
    let hub = library.folder + "/hub.sqlite"
    try sqlite(
      hub,
      "UPDATE chunks SET data = X'\(hexOf(flipped))' "
        + "WHERE upload = (SELECT upload FROM blobs WHERE hash = X'\(hash)')")

    b.engine.resume()
    await #expect(
      throws: SyncError.timeout(
        "not up to date after 2.0 seconds: still waiting for doc.txt (damaged on the hub)")
    ) { try await b.engine.synchronize(timeout: .seconds(2)) }
    #expect(try b.read("doc.txt") == "first\n")
    #expect(
      b.engine.status().waiting == [
        ContentWaiting(path: DocumentPath("doc.txt"), version: nil, reason: .damagedOnHub)
      ])
    #expect(try sqlite(hub, "SELECT lower(hex(hash)) FROM wanted") == hash + "\n")

    a.engine.resume()
    try await b.sync()
    #expect(try b.read("doc.txt") == good)
    #expect(b.engine.status().waiting.isEmpty)
    #expect(
      try sqlite(
        hub,
        "SELECT lower(hex(data)) FROM chunks "
          + "WHERE upload = (SELECT upload FROM blobs WHERE hash = X'\(hash)')")
        == hexOf(Array(good.utf8)) + "\n")
    #expect(try sqlite(hub, "SELECT count(*) FROM wanted") == "0\n")
    await a.stop()
    await b.stop()
  }
}
