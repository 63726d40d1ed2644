import CSodium
import ContentModel
import DocumentModel
import Testing

/// The key envelope and what unlocks it. Argon2id runs at its least cost here
/// (``PassphraseParameters/fastest``); the standard cost is measured by `bench-content`.
@Suite struct LibraryKeysTests {
  let laptop = DeviceID(high: 1, low: 1)
  let desktop = DeviceID(high: 2, low: 2)
  let phone = DeviceID(high: 3, low: 3)

  func newLibrary(_ passphrase: String = "correct horse battery staple") throws -> (
    keys: LibraryKeys, recoveryKey: RecoveryKey, device: DeviceKeys
  ) {
    try LibraryKeys.create(passphrase: passphrase, parameters: .fastest, device: laptop)
  }

  @Test func aNewLibraryOpensWithItsPassphraseItsRecoveryKeyAndItsDevice() throws {
    let (keys, recoveryKey, device) = try newLibrary()
    let stored = try KeyEnvelope(decoding: keys.envelope.encoded())
    #expect(stored == keys.envelope)
    #expect(stored.encoded() == keys.envelope.encoded())
    let envelope = try KeyEnvelope(decoding: keys.envelope.encoded())
    #expect(envelope.generation == 1 && envelope.currentEpoch == 1)
    #expect(envelope.passphrase.parameters == .fastest)

    let byPassphrase = try LibraryKeys(
      unlocking: envelope, passphrase: "correct horse battery staple")
    let byRecovery = try LibraryKeys(
      unlocking: envelope, recoveryKey: RecoveryKey(parsing: recoveryKey.text))
    let byDevice = try device.keyring(from: envelope)
    let expected = try keys.keyring().current
    for keyring in [try byPassphrase.keyring(), try byRecovery.keyring(), byDevice] {
      #expect(keyring.current.epoch == 1)
      #expect(keyring.current.objectSealing == expected.objectSealing)
      #expect(keyring.current.content == expected.content)
    }
  }

  @Test func aWrongPassphraseOrRecoveryKeyIsOneClearError() throws {
    let (keys, _, _) = try newLibrary()
    #expect(throws: KeyError.wrongPassphrase) {
      try LibraryKeys(unlocking: keys.envelope, passphrase: "correct horse battery stapler")
    }
    #expect(throws: KeyError.wrongPassphrase) {
      try LibraryKeys(unlocking: keys.envelope, passphrase: "")
    }
    #expect(throws: KeyError.wrongRecoveryKey) {
      try LibraryKeys(unlocking: keys.envelope, recoveryKey: .random())
    }
    #expect(KeyError.wrongPassphrase.description == "the passphrase does not unlock this library")
    #expect(throws: KeyError.emptyPassphrase) {
      try LibraryKeys.create(passphrase: "", parameters: .fastest, device: laptop)
    }
  }

  @Test func aNewPassphraseRewrapsTheSameKeys() throws {
    let (keys, recoveryKey, device) = try newLibrary("old one")
    let changed = try keys.changingPassphrase(to: "new one", parameters: .fastest)
    let envelope = changed.envelope
    #expect(envelope.generation == 2)
    #expect(envelope.epochs == keys.envelope.epochs)  // not one epoch key wrapped again
    #expect(envelope.passphrase.salt != keys.envelope.passphrase.salt)
    #expect(throws: KeyError.wrongPassphrase) {
      try LibraryKeys(unlocking: envelope, passphrase: "old one")
    }
    let unlocked = try LibraryKeys(unlocking: envelope, passphrase: "new one")
    #expect(try unlocked.keyring().current.objectSealing == keys.keyring().current.objectSealing)
    // The recovery key and the devices go on as they were.
    _ = try LibraryKeys(unlocking: envelope, recoveryKey: recoveryKey)
    #expect(try device.keyring(from: envelope).current.content == keys.keyring().current.content)
  }

  @Test func aNewRecoveryKeyRetiresTheOldOne() throws {
    let (keys, old, _) = try newLibrary()
    let (replaced, new) = keys.replacingRecoveryKey()
    #expect(throws: KeyError.wrongRecoveryKey) {
      try LibraryKeys(unlocking: replaced.envelope, recoveryKey: old)
    }
    _ = try LibraryKeys(unlocking: replaced.envelope, recoveryKey: new)
  }

  @Test func aRemovedDeviceReadsOldEpochsOnlyAndTheOthersReadAll() throws {
    let (created, _, laptopKeys) = try newLibrary()
    let (withDesktop, desktopKeys) = try created.addingDevice(desktop)
    let (withPhone, phoneKeys) = try withDesktop.addingDevice(phone)
    let before = try phoneKeys.keyring(from: withPhone.envelope)
    #expect(before.epochs.count == 1)

    let removed = try withPhone.removingDevice(phone)
    let envelope = try KeyEnvelope(decoding: removed.envelope.encoded())
    #expect(envelope.currentEpoch == 2 && envelope.generation == 4)
    #expect(envelope.devices.map(\.device) == [laptop, desktop])
    #expect(throws: KeyError.deviceRemoved) { try phoneKeys.keyring(from: envelope) }

    for device in [laptopKeys, desktopKeys] {
      let keyring = try device.keyring(from: envelope, seenGeneration: 3)
      #expect(keyring.current.epoch == 2)
      #expect(keyring.keys(for: 1)?.objectSealing == before.current.objectSealing)
    }
    // What the phone kept (epoch 1) cannot open what epoch 2 seals.
    let current = try laptopKeys.keyring(from: envelope).current
    #expect(current.objectSealing != before.current.objectSealing)
    #expect(current.content != before.current.content)
    let id = ObjectHasher(keys: current.content).id(of: Array("new".utf8), kind: .chunk)
    let sealed = ObjectSealer(keys: current).seal(
      frame: [0] + Array("new".utf8), id: id, kind: .chunk)
    #expect(throws: ManifestError.self) {
      try ObjectSealer.open(sealed, id: id, kind: .chunk, keyring: before, maximumSize: 1 << 18)
    }
    // A device joining now, with the passphrase, reads every epoch.
    let unlocked = try LibraryKeys(unlocking: envelope, passphrase: "correct horse battery staple")
    let (joined, newPhone) = try unlocked.addingDevice(phone)
    #expect(try newPhone.keyring(from: joined.envelope).epochs.count == 2)
    #expect(throws: KeyError.unknownDevice(phone.description)) {
      try removed.removingDevice(phone)
    }
  }

  @Test func aDeviceThatJoinedAgainLeavesItsOldKeyFileBehind() throws {
    let (created, _, laptopKeys) = try newLibrary()
    // The laptop joins again (a new state folder): its earlier keys no longer open anything.
    let (rejoined, newLaptopKeys) = try created.addingDevice(laptop)
    #expect(rejoined.envelope.devices.count == 1)
    #expect(throws: KeyError.deviceRemoved) { try laptopKeys.keyring(from: rejoined.envelope) }
    #expect(try newLaptopKeys.keyring(from: rejoined.envelope).current.epoch == 1)
    // A device's keys survive their encoding, and nothing else decodes as them.
    #expect(try DeviceKeys(decoding: newLaptopKeys.encoded()) == newLaptopKeys)
    #expect(throws: KeyError.self) { try DeviceKeys(decoding: rejoined.envelope.encoded()) }
  }

  @Test func aHubCannotRollBackOrForgeTheEnvelope() throws {
    let (created, _, laptopKeys) = try newLibrary()
    let (later, _) = try created.addingDevice(desktop)
    #expect(throws: KeyError.envelopeRolledBack(seen: 2, served: 1)) {
      try laptopKeys.keyring(from: created.envelope, seenGeneration: later.envelope.generation)
    }
    // Another library's envelope, even a valid one, is not this library's.
    let (other, _, _) = try newLibrary()
    #expect(throws: KeyError.otherLibrary) { try laptopKeys.keyring(from: other.envelope) }
    // A hub that seals an epoch key of its own to a device (it knows the device's public key)
    // cannot sign the result.
    var bytes = later.envelope.encoded()
    let box = later.envelope.devices.first { $0.device == laptop }!.sealedKeys[1]!
    let offset = bytes.firstRange(of: box)!.lowerBound
    var forged = [UInt8](repeating: 0, count: box.count)
    _ = crypto_box_seal(&forged, SecretKey.random().bytes, 32, laptopKeys.publicKey)
    bytes.replaceSubrange(offset..<(offset + forged.count), with: forged)
    let envelope = try KeyEnvelope(decoding: bytes)
    #expect(throws: KeyError.envelopeNotSigned) { try laptopKeys.keyring(from: envelope) }
    #expect(throws: KeyError.envelopeNotSigned) {
      try LibraryKeys(unlocking: envelope, passphrase: "correct horse battery staple")
    }
  }

  @Test func everyChangedByteOfTheEnvelopeIsRefused() throws {
    let (created, _, laptopKeys) = try newLibrary()
    let (keys, _) = try created.addingDevice(desktop)
    let bytes = keys.envelope.encoded()
    for index in bytes.indices {
      var changed = bytes
      changed[index] ^= 0x01 << UInt8(index % 8)
      do {
        let envelope = try KeyEnvelope(decoding: changed)
        // It may still have an envelope's shape; then it must not open by any means.
        #expect(throws: KeyError.self, "byte \(index)") { try laptopKeys.keyring(from: envelope) }
        #expect(throws: KeyError.self, "byte \(index)") {
          try LibraryKeys(unlocking: envelope, passphrase: "correct horse battery staple")
        }
      } catch {
        #expect(!error.description.isEmpty && !error.description.contains("\n"))
      }
    }
  }

  @Test func truncatedNewerAndForeignBytesAreOneLineErrors() throws {
    let bytes = try newLibrary().keys.envelope.encoded()
    for length in 0..<bytes.count {
      #expect(throws: KeyError.self) { try KeyEnvelope(decoding: Array(bytes[0..<length])) }
    }
    #expect(throws: KeyError.malformedEnvelope("it ends early")) {
      try KeyEnvelope(decoding: Array(bytes.dropLast()))
    }
    #expect(throws: KeyError.malformedEnvelope("bytes after its end")) {
      try KeyEnvelope(decoding: bytes + [0])
    }
    var newer = bytes
    newer[4] = 2
    #expect(throws: KeyError.newerEnvelope(2)) { try KeyEnvelope(decoding: newer) }
    #expect(
      KeyError.newerEnvelope(2).description
        == "the library's key envelope has format 2, made by a newer docsync (upgrade it)")
    #expect(throws: KeyError.malformedEnvelope("it does not start as one")) {
      try KeyEnvelope(decoding: Array("PK\u{3}\u{4} not keys".utf8))
    }
    // Parameters past the bounds: a hub cannot make a device spend 64 GiB of memory.
    var greedy = bytes
    let memoryOffset = 4 + 1 + 16 + 8 + 32 + 8
    greedy[memoryOffset + 4] = 0x10
    #expect(throws: KeyError.self) { try KeyEnvelope(decoding: greedy) }
  }

  @Test func argon2idGivesThePinnedKey() throws {
    // From Python's cryptography (Tools/key-vectors.py): one pass, 8 KiB, one lane.
    let key = try PassphraseParameters.fastest.key(
      passphrase: "correct horse battery staple", salt: Array(0..<16))
    #expect(
      key.bytes.map { String(format: "%02x", $0) }.joined()
        == "d17ea6341ca93da6079ea2f64dc4aa31dd1aaf9caa67fb42ac4afd0714706f26")
    #expect(throws: KeyError.self) {
      try PassphraseParameters(passes: 17, memoryBytes: 1 << 20).check()
    }
    #expect(throws: KeyError.self) {
      try PassphraseParameters(passes: 3, memoryBytes: 2 << 30).check()
    }
    try PassphraseParameters.standard.check()
  }
}
