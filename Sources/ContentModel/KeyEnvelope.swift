import CSodium
import DocumentModel

/// What the hub stores of an encrypted library's keys: the master key wrapped by the
/// passphrase and by the recovery key, every epoch key wrapped by the master key and sealed to
/// every device, signed with a key derived from the master key. Nothing in it opens without a
/// passphrase, a recovery key or a device's own key.
///
/// Encoding (integers little-endian, fixed width, so one envelope has one encoding):
/// `DSKE`, format (1), library id (16), generation (8), signing public key (32), passphrase
/// passes (8), memory bytes (8), salt (16), wrapped master key (72), recovery wrap (72), epoch
/// count (4) and each epoch's number (4) and wrap (72) in rising order, device count (4) and
/// each device's id (16), public key (32), count (4) and each sealed epoch's number (4) and
/// box (80), then the Ed25519 signature (64) of everything before it. A later format adds
/// fields; this docsync refuses one it does not know, saying to upgrade.
public struct KeyEnvelope: Sendable, Hashable {
  public static let format: UInt8 = 1
  static let magic = Array("DSKE".utf8)
  public static let libraryIDSize = 16
  public static let publicKeySize = crypto_box_publickeybytes()
  public static let sealedKeySize = SecretKey.size + crypto_box_sealbytes()
  public static let signatureSize = Int(crypto_sign_BYTES)
  static let mostEpochs = 1 << 16
  static let mostDevices = 1 << 12

  /// Random, made with the library: binds every wrap and key file to this library.
  public let library: [UInt8]
  /// Rises with every change, so a device can refuse an envelope older than one it has seen.
  public let generation: UInt64
  /// The Ed25519 public key of the master key's signing key.
  public let signingKey: [UInt8]
  public let passphrase: PassphraseWrap
  public let recovery: WrappedKey
  /// In rising order; the last is the current epoch.
  public let epochs: [EnvelopeEpoch]
  /// In rising order of device id.
  public let devices: [EnvelopeDevice]
  public let signature: [UInt8]

  init(
    library: [UInt8], generation: UInt64, signingKey: [UInt8], passphrase: PassphraseWrap,
    recovery: WrappedKey, epochs: [EnvelopeEpoch], devices: [EnvelopeDevice], signature: [UInt8]
  ) {
    self.library = library
    self.generation = generation
    self.signingKey = signingKey
    self.passphrase = passphrase
    self.recovery = recovery
    self.epochs = epochs
    self.devices = devices.sorted { $0.device < $1.device }
    self.signature = signature
  }

  public var currentEpoch: UInt32 { epochs.last!.epoch }

  public func encoded() -> [UInt8] { signedBytes() + signature }

  /// Everything the signature covers.
  func signedBytes() -> [UInt8] {
    var out = Self.magic
    out.append(Self.format)
    out += library
    Self.append(generation, 8, to: &out)
    out += signingKey
    Self.append(passphrase.parameters.passes, 8, to: &out)
    Self.append(passphrase.parameters.memoryBytes, 8, to: &out)
    out += passphrase.salt
    out += passphrase.wrapped.encoded
    out += recovery.encoded
    Self.append(UInt64(epochs.count), 4, to: &out)
    for epoch in epochs {
      Self.append(UInt64(epoch.epoch), 4, to: &out)
      out += epoch.wrapped.encoded
    }
    Self.append(UInt64(devices.count), 4, to: &out)
    for device in devices {
      Self.append(device.device.high, 8, to: &out)
      Self.append(device.device.low, 8, to: &out)
      out += device.publicKey
      Self.append(UInt64(device.sealedKeys.count), 4, to: &out)
      for (epoch, box) in device.sealedKeys.sorted(by: { $0.key < $1.key }) {
        Self.append(UInt64(epoch), 4, to: &out)
        out += box
      }
    }
    return out
  }

  /// Whether the signature is the master key's over these bytes, by `verifyingKey` (the one a
  /// device pinned when it joined, or the one derived from an unlocked master key).
  func isSigned(by verifyingKey: [UInt8]) -> Bool {
    guard verifyingKey == signingKey else { return false }
    let message = signedBytes()
    return crypto_sign_verify_detached(signature, message, UInt64(message.count), verifyingKey)
      == 0
  }

  /// Reads an envelope from a hub, checking its shape (not its signature: that needs a key).
  public init(decoding bytes: [UInt8]) throws(KeyError) {
    do {
      try self.init(reading: bytes)
    } catch let error as KeyError {
      throw error
    } catch let error as ManifestError {
      throw error == .truncated
        ? .malformedEnvelope("it ends early") : .malformedEnvelope(error.description)
    } catch {
      throw .malformedEnvelope("\(error)")
    }
  }

  private init(reading bytes: [UInt8]) throws {
    var reader = ByteReader(bytes)
    guard Array(try reader.bytes(4)) == Self.magic else {
      throw KeyError.malformedEnvelope("it does not start as one")
    }
    let format = try reader.byte()
    guard format == Self.format else {
      throw format > Self.format
        ? KeyError.newerEnvelope(format) : KeyError.malformedEnvelope("format \(format)")
    }
    let library = Array(try reader.bytes(Self.libraryIDSize))
    let generation = try Self.integer(&reader, 8)
    let signingKey = Array(try reader.bytes(Int(crypto_sign_PUBLICKEYBYTES)))
    let parameters = PassphraseParameters(
      passes: try Self.integer(&reader, 8), memoryBytes: try Self.integer(&reader, 8))
    try parameters.check()
    let salt = Array(try reader.bytes(PassphraseParameters.saltSize))
    let passphrase = PassphraseWrap(
      parameters: parameters, salt: salt, wrapped: try Self.wrapped(&reader))
    let recovery = try Self.wrapped(&reader)
    let epochCount = Int(try Self.integer(&reader, 4))
    guard (1...Self.mostEpochs).contains(epochCount) else {
      throw KeyError.malformedEnvelope("\(epochCount) key epochs")
    }
    var epochs: [EnvelopeEpoch] = []
    for _ in 0..<epochCount {
      let number = UInt32(try Self.integer(&reader, 4))
      guard number > (epochs.last?.epoch ?? 0) else {
        throw KeyError.malformedEnvelope("key epochs out of order")
      }
      epochs.append(EnvelopeEpoch(epoch: number, wrapped: try Self.wrapped(&reader)))
    }
    let numbers = Set(epochs.map(\.epoch))
    let deviceCount = Int(try Self.integer(&reader, 4))
    guard deviceCount <= Self.mostDevices else {
      throw KeyError.malformedEnvelope("\(deviceCount) devices")
    }
    var devices: [EnvelopeDevice] = []
    for _ in 0..<deviceCount {
      let id = DeviceID(high: try Self.integer(&reader, 8), low: try Self.integer(&reader, 8))
      guard devices.last.map({ $0.device < id }) ?? true else {
        throw KeyError.malformedEnvelope("devices out of order")
      }
      let publicKey = Array(try reader.bytes(Self.publicKeySize))
      let count = Int(try Self.integer(&reader, 4))
      guard count == epochCount else {
        throw KeyError.malformedEnvelope("device \(id) lacks a key epoch")
      }
      var sealed: [UInt32: [UInt8]] = [:]
      var previous: UInt32 = 0
      for _ in 0..<count {
        let number = UInt32(try Self.integer(&reader, 4))
        guard number > previous, numbers.contains(number) else {
          throw KeyError.malformedEnvelope("device \(id)'s key epochs do not match")
        }
        previous = number
        sealed[number] = Array(try reader.bytes(Self.sealedKeySize))
      }
      devices.append(EnvelopeDevice(device: id, publicKey: publicKey, sealedKeys: sealed))
    }
    let signature = Array(try reader.bytes(Self.signatureSize))
    guard reader.isAtEnd else { throw KeyError.malformedEnvelope("bytes after its end") }
    self.init(
      library: library, generation: generation, signingKey: signingKey, passphrase: passphrase,
      recovery: recovery, epochs: epochs, devices: devices, signature: signature)
  }

  static func append(_ value: UInt64, _ width: Int, to out: inout [UInt8]) {
    for index in 0..<width { out.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
  }

  static func integer(_ reader: inout ByteReader, _ width: Int) throws(ManifestError) -> UInt64 {
    var value: UInt64 = 0
    for (index, byte) in try reader.bytes(width).enumerated() {
      value |= UInt64(byte) << (8 * index)
    }
    return value
  }

  static func wrapped(_ reader: inout ByteReader) throws(ManifestError) -> WrappedKey {
    WrappedKey(
      nonce: Array(try reader.bytes(WrappedKey.nonceSize)),
      sealed: Array(try reader.bytes(WrappedKey.sealedSize)))
  }

  /// What a wrap is bound to: its purpose, the library, and what else names its place.
  static func binding(_ purpose: String, library: [UInt8], _ extra: [UInt8] = []) -> [UInt8] {
    Array("docsync \(purpose)".utf8) + [0] + library + extra
  }

  static func passphraseBinding(library: [UInt8], _ parameters: PassphraseParameters, salt: [UInt8])
    -> [UInt8]
  {
    var extra: [UInt8] = []
    append(parameters.passes, 8, to: &extra)
    append(parameters.memoryBytes, 8, to: &extra)
    return binding("passphrase wrap", library: library, extra + salt)
  }

  static func recoveryBinding(library: [UInt8]) -> [UInt8] {
    binding("recovery wrap", library: library)
  }

  static func epochBinding(library: [UInt8], epoch: UInt32) -> [UInt8] {
    var extra: [UInt8] = []
    append(UInt64(epoch), 4, to: &extra)
    return binding("epoch wrap", library: library, extra)
  }
}
