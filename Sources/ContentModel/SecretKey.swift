import CBlake3
import CSodium

/// A 32-byte secret: a library's master key, an epoch key, or a subkey derived from one.
///
/// Its description never shows the bytes, so a key cannot reach a log by accident.
public struct SecretKey: Sendable, Hashable, CustomStringConvertible {
  public let bytes: [UInt8]

  public static let size = 32

  /// Exactly 32 bytes; nil for any other length.
  public init?(bytes: some Collection<UInt8>) {
    guard bytes.count == Self.size else { return nil }
    self.bytes = Array(bytes)
  }

  /// 32 bytes from the kernel's random source (libsodium's `randombytes_buf`, getrandom(2)).
  public static func random() -> SecretKey {
    SecretKey(bytes: Self.randomBytes(size))!
  }

  static func randomBytes(_ count: Int) -> [UInt8] {
    precondition(sodium_init() >= 0)
    var out = [UInt8](repeating: 0, count: count)
    randombytes_buf(&out, count)
    return out
  }

  /// BLAKE3's key derivation with this key as the material: a subkey for the purpose that
  /// `context` names, which tells nothing of this key or of the subkeys of other contexts.
  /// Contexts are fixed strings, each used for one purpose only (docs/encryption.md lists them).
  public func derive(_ context: String) -> SecretKey {
    Self.derive(context, from: bytes)
  }

  /// BLAKE3's key derivation from any key material (a recovery key's 20 bytes).
  static func derive(_ context: String, from material: [UInt8]) -> SecretKey {
    var hasher = blake3_hasher()
    blake3_hasher_init_derive_key(&hasher, context)
    blake3_hasher_update(&hasher, material, material.count)
    var out = [UInt8](repeating: 0, count: Self.size)
    blake3_hasher_finalize(&hasher, &out, Self.size)
    return SecretKey(bytes: out)!
  }

  public var description: String { "SecretKey(32 bytes)" }
}
