import DocumentModel
import Testing

@testable import ContentModel

@Suite struct ObjectSealerTests {
  let keyring: LibraryKeyring
  let hasher: ObjectHasher
  let compressor = ObjectCompressor()

  init() throws {
    let (keys, _, _) = try LibraryKeys.create(
      passphrase: "p", parameters: .fastest, device: DeviceID(high: 1, low: 1))
    keyring = try keys.keyring()
    hasher = ObjectHasher(keys: keyring.current.content)
  }

  func sealed(_ plain: [UInt8], kind: ObjectKind = .chunk) -> (ObjectID, [UInt8]) {
    let id = hasher.id(of: plain, kind: kind)
    return (
      id,
      ObjectSealer(keys: keyring.current).seal(frame: compressor.frame(plain), id: id, kind: kind)
    )
  }

  func open(_ sealed: [UInt8], _ id: ObjectID, kind: ObjectKind = .chunk) throws -> [UInt8] {
    try compressor.plain(
      ObjectSealer.open(sealed, id: id, kind: kind, keyring: keyring, maximumSize: 256 << 10),
      maximumSize: 256 << 10)
  }

  @Test func chunksOfEverySizeAndKindComeBackAsTheyWere() throws {
    var random = TestBytes(seed: 5)
    let text = Array(String(repeating: "the quick brown fox ", count: 3000).utf8)
    for plain in [
      [], [7], random.bytes(100), random.bytes(16 << 10), text, random.bytes(256 << 10),
    ] {
      for kind in [ObjectKind.chunk, .node] {
        let (id, sealed) = self.sealed(plain, kind: kind)
        #expect(sealed[0] == ObjectSealer.frameByte)
        #expect(ObjectSealer.epoch(of: sealed) == 1)
        let frame = compressor.frame(plain)
        #expect(sealed.count == ObjectSealer.overhead + Padme.size(frame.count + 1))
        #expect(try open(sealed, id, kind: kind) == plain)
      }
    }
    // Compressed before it was sealed: text takes far less than its size.
    #expect(sealed(text).1.count < text.count / 10)
    // Sealed twice, the same chunk looks unrelated (random nonces).
    #expect(sealed(text).1 != sealed(text).1)
  }

  @Test func theSealMatchesAnIndependentAESGCMUnderItsDerivedKey() {
    // Tools/key-vectors.py (AES-GCM from Python's cryptography): epoch key 0…31, epoch 1, id
    // 0x11…, raw "hello", nonce 0…23.
    let keys = EpochKeys(epoch: 1, key: SecretKey(bytes: Array(0..<32))!)
    let id = ObjectID(bytes: [UInt8](repeating: 0x11, count: 32))!
    let sealed = ObjectSealer(keys: keys).seal(
      frame: [0] + Array("hello".utf8), id: id, kind: .chunk, nonce: Array(0..<24))
    #expect(
      sealed.map { String(format: "%02x", $0) }.joined()
        == "8001000000000102030405060708090a0b0c0d0e0f101112131415161702318c0b14ec21f0626e01d202ba25b1487747fda01af9"
    )
  }

  @Test func aKeyWrapMatchesAnIndependentXChaCha20Poly1305() {
    // Tools/key-vectors.py: key 0x55…, under 0…31, binding "docsync test", nonce 0…23.
    let wrapped = WrappedKey(
      SecretKey(bytes: [UInt8](repeating: 0x55, count: 32))!,
      under: SecretKey(bytes: Array(0..<32))!, binding: Array("docsync test".utf8),
      nonce: Array(0..<24))
    #expect(
      (wrapped.nonce + wrapped.sealed).map { String(format: "%02x", $0) }.joined()
        == "000102030405060708090a0b0c0d0e0f1011121314151617cb975a2ac587d8fb6611739b9e07fdbd1e127df0a88348be2a4f6ae368f8a00c5d8b8a90599b72017d31bcb4e73598f9"
    )
    #expect(
      wrapped.unwrap(under: SecretKey(bytes: Array(0..<32))!, binding: Array("docsync test".utf8))
        == SecretKey(bytes: [UInt8](repeating: 0x55, count: 32)))
    #expect(
      wrapped.unwrap(under: SecretKey(bytes: Array(0..<32))!, binding: Array("docsync tesT".utf8))
        == nil)
  }

  @Test func everyChangedByteAndEveryTruncationIsRefused() throws {
    let plain = Array("a small chunk of a document".utf8)
    let (id, sealed) = self.sealed(plain)
    for index in sealed.indices {
      for bit in 0..<8 {
        var changed = sealed
        changed[index] ^= 1 << UInt8(bit)
        #expect(throws: ManifestError.self, "byte \(index) bit \(bit)") { try open(changed, id) }
      }
    }
    for length in 0..<sealed.count {
      #expect(throws: ManifestError.self) { try open(Array(sealed[0..<length]), id) }
    }
    #expect(throws: ManifestError.self) { try open(sealed + [0], id) }
  }

  @Test func aSwappedOrRekindedObjectDoesNotOpen() throws {
    let (firstID, first) = sealed(Array("first".utf8))
    let (secondID, second) = sealed(Array("second".utf8))
    // The hub answers the request for one chunk with another's bytes.
    #expect(
      throws: ManifestError.doesNotMatch(
        firstID, "it does not open with the library's keys (damaged or swapped)")
    ) {
      try open(second, firstID)
    }
    #expect(throws: ManifestError.self) { try open(first, secondID) }
    // The same bytes as a node are another object.
    #expect(throws: ManifestError.self) { try open(first, firstID, kind: .node) }
    // A plain frame where a sealed one belongs.
    #expect(throws: ManifestError.self) { try open(compressor.frame(Array("first".utf8)), firstID) }
  }

  @Test func anotherEpochsKeysDoNotOpenIt() throws {
    let (created, _, laptop) = try LibraryKeys.create(
      passphrase: "p", parameters: .fastest, device: DeviceID(high: 1, low: 1))
    let (withPhone, _) = try created.addingDevice(DeviceID(high: 2, low: 2))
    let removed = try withPhone.removingDevice(DeviceID(high: 2, low: 2))
    let keyring = try laptop.keyring(from: removed.envelope)
    let epoch1 = keyring.keys(for: 1)!
    let epoch2 = keyring.current
    let plain = Array("made in epoch two".utf8)
    let id = ObjectHasher(keys: epoch2.content).id(of: plain, kind: .chunk)
    var sealed = ObjectSealer(keys: epoch2).seal(frame: [0] + plain, id: id, kind: .chunk)
    #expect(
      try ObjectSealer.open(sealed, id: id, kind: .chunk, keyring: keyring, maximumSize: 1 << 18)
        == [0] + plain)
    // Epoch 1's keyring (a device removed before epoch 2) has no key for it.
    let before = try laptop.keyring(from: withPhone.envelope)
    #expect(
      throws: ManifestError.doesNotMatch(
        id, "sealed in key epoch 2, which this device does not have")
    ) { try ObjectSealer.open(sealed, id: id, kind: .chunk, keyring: before, maximumSize: 1 << 18) }
    // A hub that rewrites the epoch to 1 makes it try epoch 1's key, and fail.
    sealed[1] = 1
    #expect(ObjectSealer.epoch(of: sealed) == 1 && epoch1.epoch == 1)
    #expect(throws: ManifestError.self) {
      try ObjectSealer.open(sealed, id: id, kind: .chunk, keyring: keyring, maximumSize: 1 << 18)
    }
  }

  @Test func anObjectLargerThanAnyChunkIsRefusedBeforeItIsOpened() throws {
    var random = TestBytes(seed: 2)
    let (id, sealed) = self.sealed(random.bytes(64 << 10))
    #expect(throws: ManifestError.tooLarge(sealed.count - ObjectSealer.overhead)) {
      try ObjectSealer.open(sealed, id: id, kind: .chunk, keyring: keyring, maximumSize: 16 << 10)
    }
  }
}
