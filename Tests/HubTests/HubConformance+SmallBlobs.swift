import Foundation
import Hub
import Testing

/// The batched small-blob checks of ``HubConformance/checks``: a new device's first sync and a
/// push of many small files go through these paths on both hubs, so what they store and read
/// must be exactly right.
extension HubConformance {
  static func smallBatch(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    try #require(hub.putsSmallBlobsTogether)
    let already = pseudoRandomBytes(count: 2000, seed: 40)
    let alreadyHash = try await putBlob(hub, already)
    var good = Dictionary(
      uniqueKeysWithValues: ([[]]
        + (1..<6).map { pseudoRandomBytes(count: 1000 * $0, seed: 40 + UInt64($0)) })
        .map { (HubHash.sha256($0), $0) })
    good[alreadyHash] = already
    var wrong = HubHash.sha256(Array("other".utf8))
    wrong[0] ^= 0xff
    let tooLarge = pseudoRandomBytes(count: 2 << 20, seed: 49)
    var batch = good
    batch[wrong] = Array("other".utf8)
    batch[HubHash.sha256(tooLarge)] = tooLarge
    #expect(try await hub.putSmallBlobs(batch) == Set(good.keys))
    #expect(try await !hub.hasBlob(hash: wrong))
    // Too large for a batch: not stored by it, and putBlob still takes it.
    #expect(try await !hub.hasBlob(hash: HubHash.sha256(tooLarge)))
    #expect(try await putBlob(hub, tooLarge) == HubHash.sha256(tooLarge))
    let other = try fixture.openAnother()
    for (hash, bytes) in good {
      #expect(try await other.hasBlob(hash: hash))
      #expect(try await fetchBlob(other, hash) == bytes)
    }
    #expect(try await other.smallBlobs(hashes: Array(good.keys), sizeLimit: 65536) == good)
    // Records may name them now, as they name blobs put one at a time.
    try await hub.append([makeRecord("batch", blobs: Array(good.keys))])
  }

  static func emptyBatches(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    #expect(try await hub.putSmallBlobs([:]).isEmpty)
    #expect(try await hub.smallBlobs(hashes: [], sizeLimit: 65536).isEmpty)
    // A batch of nothing but a blob under a wrong key is an empty batch too.
    var wrong = HubHash.sha256(Array("x".utf8))
    wrong[31] ^= 1
    #expect(try await hub.putSmallBlobs([wrong: Array("x".utf8)]).isEmpty)
    #expect(try await !hub.hasBlob(hash: wrong))
    #expect(try await hub.smallBlobs(hashes: [wrong], sizeLimit: 65536).isEmpty)
  }

  static func racingBatches(_ fixture: HubFixture) async throws {
    let first = fixture.hub
    let second = try fixture.openAnother()
    let blobs = Dictionary(
      uniqueKeysWithValues: (0..<200).map {
        pseudoRandomBytes(count: 100 + $0, seed: 500 + UInt64($0))
      }
      .map { (HubHash.sha256($0), $0) })
    // Overlapping halves as well as the whole, so that each waits on rows the other holds.
    let keys = blobs.keys.sorted { $0.lexicographicallyPrecedes($1) }
    let low = blobs.filter { keys.prefix(150).contains($0.key) }
    async let a = first.putSmallBlobs(blobs)
    async let b = second.putSmallBlobs(low)
    async let c = second.putSmallBlobs(blobs)
    let (storedA, storedB, storedC) = try await (a, b, c)
    #expect(storedA == Set(blobs.keys))
    #expect(storedB == Set(low.keys))
    #expect(storedC == Set(blobs.keys))
    #expect(try await first.smallBlobs(hashes: keys, sizeLimit: 65536) == blobs)
    try await second.append([makeRecord("raced", blobs: Array(keys.prefix(16)))])
  }

  static func wantedBlobPutInBatch(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    let content = pseudoRandomBytes(count: 3000, seed: 60)
    let hash = try await putBlob(hub, content)
    try await hub.append([makeRecord("a", blobs: [hash])])
    try await fixture.corruptBlob(hash)
    #expect(try await hub.smallBlobs(hashes: [hash], sizeLimit: 65536).isEmpty)
    #expect(try await hub.reportDamagedBlob(hash: hash) == .wanted)
    #expect(try await hub.wantedBlobs() == [hash])
    let fresh = pseudoRandomBytes(count: 10, seed: 61)
    let stored = try await fixture.openAnother().putSmallBlobs([
      hash: content, HubHash.sha256(fresh): fresh,
    ])
    #expect(stored == [hash, HubHash.sha256(fresh)])
    #expect(try await hub.wantedBlobs().isEmpty)
    #expect(try await fetchBlob(hub, hash) == content)
    #expect(try await hub.reportDamagedBlob(hash: hash) == .intact)
  }

  static func exactRead(_ fixture: HubFixture) async throws {
    let hub = fixture.hub
    var small: [[UInt8]: [UInt8]] = [:]
    for content in [
      [], pseudoRandomBytes(count: 1, seed: 70), pseudoRandomBytes(count: 65536, seed: 71),
    ]
      + (0..<5).map({ pseudoRandomBytes(count: 4096 + $0, seed: 72 + UInt64($0)) })
    {
      small[try await putBlob(hub, content)] = content
    }
    let over = try await putBlob(hub, pseudoRandomBytes(count: 65537, seed: 80))
    let damaged = try await putBlob(hub, pseudoRandomBytes(count: 3000, seed: 81))
    try await fixture.corruptBlob(damaged)
    let missing = HubHash.sha256(Array("never put".utf8))
    let asked = Array(small.keys) + [over, damaged, missing]
    #expect(try await hub.smallBlobs(hashes: asked, sizeLimit: 65536) == small)
    // Asked twice in one page, a blob comes back once, right.
    let key = try #require(small.keys.first)
    #expect(try await hub.smallBlobs(hashes: [key, key], sizeLimit: 65536) == [key: small[key]!])
    // A blob of several chunks, under a limit that lets it in, comes back whole.
    let several = pseudoRandomBytes(count: 2 << 20 + 100, seed: 82)
    let severalHash = try await putBlob(hub, several)
    #expect(
      try await hub.smallBlobs(hashes: [severalHash, over], sizeLimit: 3 << 20) == [
        severalHash: several, over: pseudoRandomBytes(count: 65537, seed: 80),
      ])
  }
}
