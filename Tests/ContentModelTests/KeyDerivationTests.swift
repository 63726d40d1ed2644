import CBlake3
import ContentModel
import DocumentModel
import Testing

/// Subkeys are a format: the values here come from Python's `blake3` package
/// (`Tools/key-vectors.py`), so that a change to a context, which would leave every encrypted
/// library unreadable, fails here first.
@Suite struct KeyDerivationTests {
  let epochKey = SecretKey(bytes: Array(0..<32))!

  func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

  @Test func everyContextGivesItsPinnedSubkey() {
    let expected = [
      KeyDerivation.objectIDs: "dfb34369a568f12bc01263bc87ff907dff31f5bf318bce960f5dcc8e2e337d29",
      KeyDerivation.boundaries: "b46ee7eb910ad5d4db2aebd2275ba3ef7f94c080c0f56a4a6e413bcffaf3bc67",
      KeyDerivation.objectSealing:
        "d0ec08e7f4124058026b844ab07654cff6fd532479561ac5c99896c70691ce15",
      KeyDerivation.recordSealing:
        "2860ca9ce7057d82452a191e1f5174428b487a09ff71b991c5256d141802973e",
      KeyDerivation.recordIDs: "0d10e742d31c11c8f7a851996ed04efc812604d7b1bdfb9e75f9024bec643b8f",
      KeyDerivation.epochWrapping:
        "675cd3a1f07e3bd3117bf78778704c214f016da6500c336dcff2765b7107d07f",
      KeyDerivation.envelopeSigning:
        "c69c06925880c3a909690a435cab14b3df4a9299836a4178b78060809fb4afeb",
      KeyDerivation.recoveryWrapping:
        "22255da386f20a16e0132412f395f3660675c53c29d7afd3829d7ce90d371404",
    ]
    #expect(Set(KeyDerivation.all) == Set(expected.keys))
    for (context, value) in expected {
      #expect(hex(epochKey.derive(context).bytes) == value, "\(context)")
    }
  }

  @Test func anEpochsKeysAreItsSubkeysAndNameContentByThem() {
    let keys = EpochKeys(epoch: 1, key: epochKey)
    #expect(keys.content.idKey == epochKey.derive(KeyDerivation.objectIDs).bytes)
    #expect(keys.objectSealing == epochKey.derive(KeyDerivation.objectSealing))
    #expect(keys.recordSealing == epochKey.derive(KeyDerivation.recordSealing))
    #expect(keys.recordIDs == epochKey.derive(KeyDerivation.recordIDs))
    #expect(keys.content.gear == GearTable(seed: epochKey.derive(KeyDerivation.boundaries).bytes))
    // "hello" as a chunk of a library whose epoch key is 0, 1, …, 31.
    let id = ObjectHasher(keys: keys.content).id(of: Array("hello".utf8), kind: .chunk)
    #expect(id.hex == "4d7c928e905a57528353bc19fc4ce4a4bd4375be4ac6c90bbe471c7cd7d7bba0")
    #expect(id != ObjectHasher().id(of: Array("hello".utf8), kind: .chunk))
  }

  @Test func recordIdsAreKeyedByTheEpoch() {
    let encoding = Array("a record's canonical encoding".utf8)
    let keys = EpochKeys(epoch: 1, key: epochKey)
    #expect(
      keys.recordID(ofEncoding: encoding).hex
        == "39965be4b6ecac76d717a34465e87961a498c9cd111abd1042f2c270dfadf90a")
    #expect(keys.recordID(ofEncoding: encoding) != VersionID(.sha256(encoding)))
    #expect(
      EpochKeys(epoch: 2, key: .random()).recordID(ofEncoding: encoding)
        != keys.recordID(ofEncoding: encoding))
  }

  @Test func twoEpochsShareNoKeyAndCutAtOtherBoundaries() {
    let first = EpochKeys(epoch: 1, key: .random())
    let second = EpochKeys(epoch: 2, key: .random())
    #expect(first.content.idKey != second.content.idKey)
    #expect(first.objectSealing != second.objectSealing)
    #expect(first.recordSealing != second.recordSealing)
    var random = TestBytes(seed: 41)
    let data = random.bytes(4 << 20)
    func cuts(_ keys: EpochKeys) -> [Int] {
      var splitter = ContentSplitter(
        chunker: ContentChunker(keys: keys.content),
        hasher: ObjectHasher(keys: keys.content))
      var sizes: [Int] = []
      data.withUnsafeBytes { splitter.append($0) { bytes, _ in sizes.append(bytes.count) } }
      _ = splitter.finish { bytes, _ in sizes.append(bytes.count) }
      return sizes
    }
    #expect(cuts(first) != cuts(second))
  }

  @Test func aSecretKeyNeverShowsItsBytes() {
    let key = SecretKey(bytes: [UInt8](repeating: 0xab, count: 32))!
    #expect(!"\(key)".contains("ab") && !"\(key)".contains("171"))
    #expect(SecretKey(bytes: [1, 2, 3]) == nil)
    #expect(SecretKey.random() != SecretKey.random())
  }
}
