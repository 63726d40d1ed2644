import ContentModel
import DocumentModel
import Foundation
import SyncEngine
import Testing

/// A chunk damaged in the hub, by one flipped byte: the hub drops it and lists its id as
/// wanted; the device that needs it says so, tries again less and less often, and fetches at
/// once when a device that has the content puts it again.
@Suite("damaged hub chunks, in process")
struct DamagedHubChunkTests {
  @Test func aDamagedHubChunkIsReportedAsSuchUntilItIsPutAgain() async throws {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    try a.write("doc.txt", "first\n")
    try await a.sync()
    try await b.sync()
    b.engine.pause()
    let good = "second, its chunk damaged on the hub\n"
    try a.write("doc.txt", good)
    try await a.sync()
    // A holds the only good copy and is paused: nobody can put it again yet.
    a.engine.pause()
    var flipped = Array(good.utf8)
    flipped[0] ^= 0x20
    let id = ObjectHasher().id(of: Array(good.utf8), kind: .chunk).hex
    let hub = library.folder + "/hub.sqlite"
    // A raw frame: the frame byte 0, then the bytes (a short text does not compress).
    // Held in its row, as objects stored before packs are, its pack's copy no longer named.
    try sqlite(
      hub, "UPDATE objects SET data = X'00\(hexOf(flipped))', pack = NULL WHERE id = X'\(id)'")
    #expect(try sqlite(hub, "SELECT count(*) FROM objects WHERE id = X'\(id)'") == "1\n")

    b.engine.resume()
    let waiting = [
      ContentWaiting(path: DocumentPath("doc.txt"), version: nil, reason: .damagedOnHub)
    ]
    await #expect(
      throws: SyncError.timeout(
        "not up to date after 2.0 seconds: still waiting for doc.txt (damaged on the hub)")
    ) { try await b.engine.synchronize(timeout: .seconds(2)) }
    #expect(try sqlite(hub, "SELECT lower(hex(id)) FROM wanted_objects") == id + "\n")
    // While a sync is asked for, rounds follow each other at once: the reason must stay what
    // the hub said (it once fell back to "fetching" every round, and the chunk was asked for
    // again at every one, because the device compared the chunk's id with the wanted blobs).
    let asked = Task { try? await b.engine.synchronize(timeout: .seconds(2)) }
    // At least 1.5 s and 20 samples, however busy the machine (other suites run beside).
    let end = Date().addingTimeInterval(1.5)
    let limit = Date().addingTimeInterval(30)
    var samples = 0
    while (Date() < end || samples < 20) && Date() < limit {
      #expect(b.engine.status().waiting == waiting)
      samples += 1
      try await Task.sleep(for: .milliseconds(10))
    }
    await asked.value
    #expect(samples >= 20)
    #expect(try b.read("doc.txt") == "first\n")

    a.engine.resume()
    try await a.sync()
    try await b.sync()
    #expect(try b.read("doc.txt") == good)
    #expect(b.engine.status().waiting.isEmpty)
    #expect(try sqlite(hub, "SELECT count(*) FROM wanted_objects") == "0\n")
    await a.stop()
    await b.stop()
  }
}
