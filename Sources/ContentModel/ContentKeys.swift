import CSodium

/// The library's secrets for content addressing: the key of object ids and the seed of chunk
/// boundaries. A library that is not encrypted uses ``plain``, so two such libraries share
/// ids; an encrypted one derives both from its master key, so the same file in two libraries
/// shares nothing on any hub and a hub cannot confirm that a library holds a known file.
public struct ContentKeys: Sendable, Hashable {
  /// The key of object ids, or empty for unkeyed ids: BLAKE2b's key (16 to 64 bytes), and what
  /// BLAKE3's per-kind keys are derived from.
  public let idKey: [UInt8]
  /// The gear table that places chunk boundaries (see ``GearTable``).
  public let gear: GearTable

  /// Keys from a library secret of at least 32 bytes: two independent subkeys.
  public init(librarySecret: [UInt8]) {
    precondition(librarySecret.count >= 32, "a library secret has at least 32 bytes")
    idKey = Self.derive(librarySecret, label: "object ids")
    gear = GearTable(seed: Self.derive(librarySecret, label: "boundaries"))
  }

  /// Keys derived elsewhere (``EpochKeys``): an id key of 32 bytes and the gear table's seed.
  public init(idKey: [UInt8], gearSeed: [UInt8]) {
    precondition(idKey.count == 32, "an id key has 32 bytes")
    self.init(idKey: idKey, gear: GearTable(seed: gearSeed))
  }

  private init(idKey: [UInt8], gear: GearTable) {
    self.idKey = idKey
    self.gear = gear
  }

  /// Unkeyed ids and the fixed gear table: every plain library chunks and names content alike.
  public static let plain = ContentKeys(idKey: [], gear: GearTable(seed: []))

  /// BLAKE2b-256 of the label, keyed by the secret: a subkey that reveals nothing of the
  /// secret or of the other subkeys.
  static func derive(_ secret: [UInt8], label: String) -> [UInt8] {
    precondition(sodium_init() >= 0)
    var out = [UInt8](repeating: 0, count: 32)
    let message = Array("docsync content key: \(label)".utf8)
    let key = Array(secret.prefix(Int(crypto_generichash_blake2b_KEYBYTES_MAX)))
    _ = crypto_generichash_blake2b(
      &out, out.count, message, UInt64(message.count), key, key.count)
    return out
  }
}
