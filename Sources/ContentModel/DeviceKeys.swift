import CSodium
import DocumentModel

/// A device's own keys for a library, kept in its state folder (`DeviceKeyFile` in
/// LocalStore) so that a remount opens the library without the passphrase: an X25519 key pair,
/// to which the envelope seals every epoch key, and the envelope's verifying key, pinned when
/// the device joined, so that a hub cannot hand it keys of its own making.
///
/// It holds no master key: a device removed later reads nothing sealed after its removal.
public struct DeviceKeys: Sendable, Hashable {
  public static let format: UInt8 = 1
  static let magic = Array("DSDK".utf8)

  public let library: [UInt8]
  public let device: DeviceID
  let secretKey: SecretKey
  public let publicKey: [UInt8]
  public let verifyingKey: [UInt8]

  init(library: [UInt8], device: DeviceID, secretKey: SecretKey, verifyingKey: [UInt8]) {
    self.library = library
    self.device = device
    self.secretKey = secretKey
    var publicKey = [UInt8](repeating: 0, count: KeyEnvelope.publicKeySize)
    _ = crypto_scalarmult_base(&publicKey, secretKey.bytes)
    self.publicKey = publicKey
    self.verifyingKey = verifyingKey
  }

  /// New keys for `device` joining `library`.
  static func new(library: [UInt8], device: DeviceID, verifyingKey: [UInt8]) -> DeviceKeys {
    DeviceKeys(
      library: library, device: device, secretKey: SecretKey.random(), verifyingKey: verifyingKey)
  }

  /// The epoch keys the envelope gives this device, after checking that the envelope is the
  /// library's (its signature by the pinned key), not older than the generation this device
  /// has seen, and still names this device.
  public func keyring(from envelope: KeyEnvelope, seenGeneration: UInt64 = 0) throws(KeyError)
    -> LibraryKeyring
  {
    guard envelope.library == library else { throw .otherLibrary }
    guard envelope.isSigned(by: verifyingKey) else { throw .envelopeNotSigned }
    guard envelope.generation >= seenGeneration else {
      throw .envelopeRolledBack(seen: seenGeneration, served: envelope.generation)
    }
    guard let entry = envelope.devices.first(where: { $0.device == device }),
      entry.publicKey == publicKey
    else { throw .deviceRemoved }
    var epochs: [EpochKeys] = []
    for epoch in envelope.epochs {
      guard let box = entry.sealedKeys[epoch.epoch], let key = open(box) else {
        throw .malformedEnvelope("epoch \(epoch.epoch) does not open for this device")
      }
      epochs.append(EpochKeys(epoch: epoch.epoch, key: key))
    }
    return LibraryKeyring(library: library, generation: envelope.generation, epochs: epochs)
  }

  /// `key` sealed to the device whose public key is `publicKey`.
  static func seal(_ key: SecretKey, to publicKey: [UInt8]) -> [UInt8] {
    var box = [UInt8](repeating: 0, count: KeyEnvelope.sealedKeySize)
    _ = crypto_box_seal(&box, key.bytes, UInt64(SecretKey.size), publicKey)
    return box
  }

  func open(_ box: [UInt8]) -> SecretKey? {
    var out = [UInt8](repeating: 0, count: SecretKey.size)
    guard box.count == KeyEnvelope.sealedKeySize,
      crypto_box_seal_open(&out, box, UInt64(box.count), publicKey, secretKey.bytes) == 0
    else { return nil }
    return SecretKey(bytes: out)
  }

  /// `DSDK`, format (1), library id (16), device id (16), secret key (32), verifying key (32).
  public func encoded() -> [UInt8] {
    var out = Self.magic + [Self.format] + library
    KeyEnvelope.append(device.high, 8, to: &out)
    KeyEnvelope.append(device.low, 8, to: &out)
    return out + secretKey.bytes + verifyingKey
  }

  public init(decoding bytes: [UInt8]) throws(KeyError) {
    let size = 4 + 1 + KeyEnvelope.libraryIDSize + 16 + SecretKey.size + 32
    guard bytes.count >= 5, Array(bytes[0..<4]) == Self.magic else {
      throw .malformedKeyFile("it does not start as one")
    }
    guard bytes[4] == Self.format else {
      throw .malformedKeyFile("format \(bytes[4]), which this docsync does not know")
    }
    guard bytes.count == size else {
      throw .malformedKeyFile("\(bytes.count) bytes, not \(size)")
    }
    var reader = ByteReader(Array(bytes[5...]))
    do {
      let library = Array(try reader.bytes(KeyEnvelope.libraryIDSize))
      let high = try KeyEnvelope.integer(&reader, 8)
      let low = try KeyEnvelope.integer(&reader, 8)
      let secret = SecretKey(bytes: try reader.bytes(SecretKey.size))!
      let verifying = Array(try reader.bytes(32))
      self.init(
        library: library, device: DeviceID(high: high, low: low), secretKey: secret,
        verifyingKey: verifying)
    } catch {
      throw .malformedKeyFile("it ends early")
    }
  }
}
