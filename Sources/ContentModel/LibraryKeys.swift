import CSodium
import DocumentModel

/// An encrypted library's key envelope, unlocked: the master key in memory, for the few things
/// that need it (creating the library, a device joining or being removed, a new passphrase or
/// recovery key). Each change gives a new envelope (a higher generation, signed again), which
/// the caller stores on the hub; the master key itself never changes, so no content or record
/// is encrypted again.
public struct LibraryKeys: Sendable {
  public let envelope: KeyEnvelope
  let master: SecretKey

  init(envelope: KeyEnvelope, master: SecretKey) {
    self.envelope = envelope
    self.master = master
  }

  /// A new library: its master key, epoch 1, the passphrase's and a new recovery key's wraps,
  /// and `device` as its first device.
  public static func create(
    passphrase: String, parameters: PassphraseParameters = .standard, device: DeviceID
  ) throws(KeyError) -> (keys: LibraryKeys, recoveryKey: RecoveryKey, device: DeviceKeys) {
    let library = SecretKey.randomBytes(KeyEnvelope.libraryIDSize)
    let master = SecretKey.random()
    let recoveryKey = RecoveryKey.random()
    let epochKey = SecretKey.random()
    let signing = Self.signingKeys(master)
    let deviceKeys = DeviceKeys.new(library: library, device: device, verifyingKey: signing.public)
    let envelope = Self.signed(
      KeyEnvelope(
        library: library, generation: 1, signingKey: signing.public,
        passphrase: try Self.wrap(master, passphrase: passphrase, parameters, library: library),
        recovery: WrappedKey(
          master, under: recoveryKey.wrappingKey,
          binding: KeyEnvelope.recoveryBinding(library: library)),
        epochs: [Self.wrap(epochKey, epoch: 1, master: master, library: library)],
        devices: [
          EnvelopeDevice(
            device: device, publicKey: deviceKeys.publicKey,
            sealedKeys: [1: DeviceKeys.seal(epochKey, to: deviceKeys.publicKey)])
        ], signature: []),
      master: master)
    return (LibraryKeys(envelope: envelope, master: master), recoveryKey, deviceKeys)
  }

  /// Unlocks with the passphrase: about a second of Argon2id at the envelope's parameters.
  public init(unlocking envelope: KeyEnvelope, passphrase: String) throws(KeyError) {
    let wrap = envelope.passphrase
    let key = try wrap.parameters.key(passphrase: passphrase, salt: wrap.salt)
    guard
      let master = wrap.wrapped.unwrap(
        under: key,
        binding: KeyEnvelope.passphraseBinding(
          library: envelope.library, wrap.parameters, salt: wrap.salt))
    else { throw .wrongPassphrase }
    try self.init(checking: envelope, master: master)
  }

  public init(unlocking envelope: KeyEnvelope, recoveryKey: RecoveryKey) throws(KeyError) {
    guard
      let master = envelope.recovery.unwrap(
        under: recoveryKey.wrappingKey,
        binding: KeyEnvelope.recoveryBinding(library: envelope.library))
    else { throw .wrongRecoveryKey }
    try self.init(checking: envelope, master: master)
  }

  /// The envelope opened: it must be signed by this master key, or someone without it (the hub)
  /// changed what it says.
  private init(checking envelope: KeyEnvelope, master: SecretKey) throws(KeyError) {
    guard envelope.isSigned(by: Self.signingKeys(master).public) else {
      throw .envelopeNotSigned
    }
    self.init(envelope: envelope, master: master)
  }

  /// Every epoch's keys, as the master key opens them.
  public func keyring() throws(KeyError) -> LibraryKeyring {
    LibraryKeyring(
      library: envelope.library, generation: envelope.generation,
      epochs: try epochKeys().map { EpochKeys(epoch: $0.epoch, key: $0.key) })
  }

  /// The same master key under a new passphrase (a new salt, and `parameters`).
  public func changingPassphrase(
    to passphrase: String, parameters: PassphraseParameters = .standard
  ) throws(KeyError) -> LibraryKeys {
    let wrap = try Self.wrap(master, passphrase: passphrase, parameters, library: envelope.library)
    return changed(passphrase: wrap)
  }

  /// A new recovery key; the one before stops working.
  public func replacingRecoveryKey() -> (keys: LibraryKeys, recoveryKey: RecoveryKey) {
    let recoveryKey = RecoveryKey.random()
    let wrap = WrappedKey(
      master, under: recoveryKey.wrappingKey,
      binding: KeyEnvelope.recoveryBinding(library: envelope.library))
    return (changed(recovery: wrap), recoveryKey)
  }

  /// `device` joins (or joins again, with new keys): every epoch is sealed to its new key pair.
  public func addingDevice(_ device: DeviceID) throws(KeyError) -> (
    keys: LibraryKeys, device: DeviceKeys
  ) {
    let keys = DeviceKeys.new(
      library: envelope.library, device: device, verifyingKey: envelope.signingKey)
    var sealed: [UInt32: [UInt8]] = [:]
    for epoch in try epochKeys() {
      sealed[epoch.epoch] = DeviceKeys.seal(epoch.key, to: keys.publicKey)
    }
    let devices =
      envelope.devices.filter { $0.device != device }
      + [EnvelopeDevice(device: device, publicKey: keys.publicKey, sealedKeys: sealed)]
    return (changed(devices: devices), keys)
  }

  /// `device` leaves, and a new epoch begins: what is made from now on is sealed with a key the
  /// removed device never had. Every earlier epoch stays readable by the devices that remain.
  public func removingDevice(_ device: DeviceID) throws(KeyError) -> LibraryKeys {
    guard envelope.devices.contains(where: { $0.device == device }) else {
      throw .unknownDevice(device.description)
    }
    let number = envelope.currentEpoch + 1
    let epochKey = SecretKey.random()
    let epochs =
      envelope.epochs + [
        Self.wrap(epochKey, epoch: number, master: master, library: envelope.library)
      ]
    let devices = envelope.devices.filter { $0.device != device }.map { entry in
      var sealed = entry.sealedKeys
      sealed[number] = DeviceKeys.seal(epochKey, to: entry.publicKey)
      return EnvelopeDevice(device: entry.device, publicKey: entry.publicKey, sealedKeys: sealed)
    }
    return changed(epochs: epochs, devices: devices)
  }

  private func epochKeys() throws(KeyError) -> [(epoch: UInt32, key: SecretKey)] {
    let wrapping = master.derive(KeyDerivation.epochWrapping)
    var out: [(epoch: UInt32, key: SecretKey)] = []
    for epoch in envelope.epochs {
      guard
        let key = epoch.wrapped.unwrap(
          under: wrapping,
          binding: KeyEnvelope.epochBinding(library: envelope.library, epoch: epoch.epoch))
      else { throw .malformedEnvelope("epoch \(epoch.epoch) does not open") }
      out.append((epoch.epoch, key))
    }
    return out
  }

  private func changed(
    passphrase: PassphraseWrap? = nil, recovery: WrappedKey? = nil,
    epochs: [EnvelopeEpoch]? = nil, devices: [EnvelopeDevice]? = nil
  ) -> LibraryKeys {
    let next = KeyEnvelope(
      library: envelope.library, generation: envelope.generation + 1,
      signingKey: envelope.signingKey, passphrase: passphrase ?? envelope.passphrase,
      recovery: recovery ?? envelope.recovery, epochs: epochs ?? envelope.epochs,
      devices: devices ?? envelope.devices, signature: [])
    return LibraryKeys(envelope: Self.signed(next, master: master), master: master)
  }

  private static func signed(_ envelope: KeyEnvelope, master: SecretKey) -> KeyEnvelope {
    let message = envelope.signedBytes()
    var signature = [UInt8](repeating: 0, count: KeyEnvelope.signatureSize)
    _ = crypto_sign_detached(
      &signature, nil, message, UInt64(message.count), signingKeys(master).secret)
    return KeyEnvelope(
      library: envelope.library, generation: envelope.generation, signingKey: envelope.signingKey,
      passphrase: envelope.passphrase, recovery: envelope.recovery, epochs: envelope.epochs,
      devices: envelope.devices, signature: signature)
  }

  /// The Ed25519 key pair that signs envelopes, from the master key alone.
  static func signingKeys(_ master: SecretKey) -> (public: [UInt8], secret: [UInt8]) {
    precondition(sodium_init() >= 0)
    let seed = master.derive(KeyDerivation.envelopeSigning)
    var publicKey = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
    var secretKey = [UInt8](repeating: 0, count: crypto_sign_secretkeybytes())
    _ = crypto_sign_seed_keypair(&publicKey, &secretKey, seed.bytes)
    return (publicKey, secretKey)
  }

  static func wrap(
    _ master: SecretKey, passphrase: String, _ parameters: PassphraseParameters,
    library: [UInt8]
  ) throws(KeyError) -> PassphraseWrap {
    guard !passphrase.isEmpty else { throw .emptyPassphrase }
    let salt = SecretKey.randomBytes(PassphraseParameters.saltSize)
    let key = try parameters.key(passphrase: passphrase, salt: salt)
    return PassphraseWrap(
      parameters: parameters, salt: salt,
      wrapped: WrappedKey(
        master, under: key,
        binding: KeyEnvelope.passphraseBinding(library: library, parameters, salt: salt)))
  }

  static func wrap(_ key: SecretKey, epoch: UInt32, master: SecretKey, library: [UInt8])
    -> EnvelopeEpoch
  {
    EnvelopeEpoch(
      epoch: epoch,
      wrapped: WrappedKey(
        key, under: master.derive(KeyDerivation.epochWrapping),
        binding: KeyEnvelope.epochBinding(library: library, epoch: epoch)))
  }
}
