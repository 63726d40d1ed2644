import CSodium

/// The cost of turning a passphrase into a key: Argon2id (libsodium's `crypto_pwhash`, version
/// 1.3, one lane), recorded in the key envelope beside the salt so that any device, and any
/// later docsync, derives the same key.
public struct PassphraseParameters: Sendable, Hashable {
  /// Argon2id's passes over its memory (`opslimit`).
  public let passes: UInt64
  /// Argon2id's memory in bytes (`memlimit`).
  public let memoryBytes: UInt64

  public init(passes: UInt64, memoryBytes: UInt64) {
    self.passes = passes
    self.memoryBytes = memoryBytes
  }

  /// About one second of one core on the project's machines: 4 passes over 384 MiB took 1.07 s
  /// of processor time (session 46, `bench-content`, which prints it; 4 passes over 256 MiB
  /// took 0.63 s, 3 over 512 MiB 1.22 s). libsodium's "moderate" is 3 passes over 256 MiB,
  /// its "sensitive" 4 over 1 GiB. A guess at a stolen envelope's passphrase costs as much.
  public static let standard = PassphraseParameters(passes: 4, memoryBytes: 384 << 20)

  /// libsodium's least (one pass over 8 KiB): for tests only, never for a library.
  public static let fastest = PassphraseParameters(
    passes: UInt64(crypto_pwhash_argon2id_OPSLIMIT_MIN),
    memoryBytes: UInt64(crypto_pwhash_argon2id_MEMLIMIT_MIN))

  /// The most an envelope may ask for: a hub that writes more cannot make a device spend
  /// minutes or gigabytes before it learns the passphrase is wrong.
  public static let mostPasses: UInt64 = 16
  public static let mostMemoryBytes: UInt64 = 1 << 30

  public func check() throws(KeyError) {
    guard passes >= UInt64(crypto_pwhash_argon2id_OPSLIMIT_MIN), passes <= Self.mostPasses else {
      throw .passphraseParameters("\(passes) passes (1 to \(Self.mostPasses))")
    }
    guard memoryBytes >= UInt64(crypto_pwhash_argon2id_MEMLIMIT_MIN),
      memoryBytes <= Self.mostMemoryBytes, memoryBytes % 1024 == 0
    else {
      throw .passphraseParameters("\(memoryBytes) bytes of memory (8 KiB to 1 GiB, whole KiB)")
    }
  }

  public static let saltSize = Int(crypto_pwhash_argon2id_SALTBYTES)

  /// The key a passphrase gives with `salt`: Argon2id of its UTF-8 bytes.
  public func key(passphrase: String, salt: [UInt8]) throws(KeyError) -> SecretKey {
    try check()
    precondition(sodium_init() >= 0)
    precondition(salt.count == Self.saltSize)
    let length = UInt64(passphrase.utf8.count)
    var out = [UInt8](repeating: 0, count: SecretKey.size)
    let status = passphrase.withCString { text in
      crypto_pwhash(
        &out, UInt64(out.count), text, length, salt, passes, Int(memoryBytes),
        crypto_pwhash_ALG_ARGON2ID13)
    }
    // Fails only when the memory cannot be had.
    guard status == 0 else {
      throw .passphraseParameters("Argon2id could not get \(memoryBytes >> 20) MiB of memory")
    }
    return SecretKey(bytes: out)!
  }
}
