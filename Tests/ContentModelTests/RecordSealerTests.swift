import DocumentModel
import Testing

@testable import ContentModel

@Suite struct RecordSealerTests {
  let keyring: LibraryKeyring
  let record = VersionID(Digest256(bytes: [UInt8](repeating: 0x22, count: 32))!)
  let parents = [
    VersionID(Digest256(bytes: [UInt8](repeating: 0x44, count: 32))!),
    VersionID(Digest256(bytes: [UInt8](repeating: 0x33, count: 32))!),
  ]
  let fields = Array("notes/plan.md · 1234 bytes · 2026-11-29T09.30.00Z · 0644".utf8)

  init() throws {
    let (keys, _, _) = try LibraryKeys.create(
      passphrase: "p", parameters: .fastest, device: DeviceID(high: 1, low: 1))
    keyring = try keys.keyring()
  }

  func seal(_ fields: [UInt8], record: VersionID, parents: [VersionID]) -> [UInt8] {
    RecordSealer(keys: keyring.current).seal(fields, record: record, parents: parents)
  }

  @Test func fieldsComeBackForTheirOwnRecordWhateverTheParentsOrder() throws {
    let sealed = seal(fields, record: record, parents: parents)
    #expect(sealed.count == RecordSealer.sealedSize(fields.count))
    #expect(sealed.firstRange(of: Array("plan".utf8)) == nil)
    #expect(
      try RecordSealer.open(sealed, record: record, parents: parents.reversed(), keyring: keyring)
        == fields)
    #expect(
      try RecordSealer.open(
        seal([], record: record, parents: []), record: record, parents: [], keyring: keyring) == [])
  }

  @Test func fieldsMovedToAnotherRecordOrOtherParentsDoNotOpen() throws {
    let sealed = seal(fields, record: record, parents: parents)
    let other = VersionID(Digest256(bytes: [UInt8](repeating: 0x55, count: 32))!)
    // Moved: the same blob presented as another record.
    #expect(throws: KeyError.self) {
      try RecordSealer.open(sealed, record: other, parents: parents, keyring: keyring)
    }
    // Replayed as a new version: the same blob with other parents, one dropped, one added.
    for changed in [[parents[0]], parents + [other], [record]] {
      #expect(throws: KeyError.self) {
        try RecordSealer.open(sealed, record: record, parents: changed, keyring: keyring)
      }
    }
    #expect(
      KeyError.recordRefused("x").description == "a sealed record was refused: x")
  }

  @Test func fieldsSealedInAnEpochThisDeviceLacksSaySo() throws {
    let (created, _, laptop) = try LibraryKeys.create(
      passphrase: "p", parameters: .fastest, device: DeviceID(high: 1, low: 1))
    let (withPhone, phone) = try created.addingDevice(DeviceID(high: 2, low: 2))
    let removed = try withPhone.removingDevice(DeviceID(high: 2, low: 2))
    let current = try laptop.keyring(from: removed.envelope)
    let phoneKeyring = try phone.keyring(from: withPhone.envelope)
    let sealed = RecordSealer(keys: current.current).seal(fields, record: record, parents: parents)
    #expect(
      try RecordSealer.open(sealed, record: record, parents: parents, keyring: current) == fields)
    #expect(
      throws: KeyError.recordRefused("sealed in key epoch 2, which this device does not have")
    ) { try RecordSealer.open(sealed, record: record, parents: parents, keyring: phoneKeyring) }
    // Fields of epoch 1 still open for the devices that remain.
    let old = RecordSealer(keys: phoneKeyring.current).seal(fields, record: record, parents: [])
    #expect(try RecordSealer.open(old, record: record, parents: [], keyring: current) == fields)
  }

  @Test func everyChangedByteAndTruncationIsRefused() throws {
    let sealed = seal(fields, record: record, parents: parents)
    for index in sealed.indices {
      var changed = sealed
      changed[index] ^= 0x40
      #expect(throws: KeyError.self, "byte \(index)") {
        try RecordSealer.open(changed, record: record, parents: parents, keyring: keyring)
      }
    }
    for length in 0..<sealed.count {
      #expect(throws: KeyError.self) {
        try RecordSealer.open(
          Array(sealed[0..<length]), record: record, parents: parents, keyring: keyring)
      }
    }
  }

  @Test func shortFieldsOfDifferentLengthsLookAlike() {
    // Names from 1 to 62 bytes long seal to one size; sizes grow in steps after.
    let sizes = Set((0..<63).map { RecordSealer.sealedSize($0) })
    #expect(sizes == [RecordSealer.overhead + 64])
    for length in 0..<5000 {
      let size = RecordSealer.sealedSize(length) - RecordSealer.overhead
      #expect(size % 64 == 0 && size > length)
      #expect(size <= max(64, length + 1 + (length + 1) / 8 + 64))
    }
  }

  @Test func theSealMatchesAnIndependentAESGCMUnderItsDerivedKey() {
    // Tools/key-vectors.py (AES-GCM from Python's cryptography): epoch key 0…31, epoch 1, fields "notes/plan.md", nonce 0…23.
    let keys = EpochKeys(epoch: 1, key: SecretKey(bytes: Array(0..<32))!)
    let sealed = RecordSealer(keys: keys).seal(
      Array("notes/plan.md".utf8), record: record, parents: parents, nonce: Array(0..<24))
    #expect(
      sealed.map { String(format: "%02x", $0) }.joined()
        == "0101000000000102030405060708090a0b0c0d0e0f10111213141516173b9810784145ffcca054a23ed27a00dfa4e7ac217373e6966ded685203ced6c981cd156fafb973d3a1d93e23e17df2f457d1b95bd8728e73b6ab42feb51798d166372fb39181a3904b49ff1914b7db4c"
    )
  }
}
