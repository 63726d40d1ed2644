import CSodium

/// A 32-byte key encrypted and authenticated under another key (XChaCha20-Poly1305, a random
/// 24-byte nonce), with what it is bound to as associated data: the key envelope's wraps of
/// the master key and of each epoch key.
public struct WrappedKey: Sendable, Hashable {
  public static let nonceSize = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
  public static let sealedSize = SecretKey.size + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
  public static let size = nonceSize + sealedSize

  public let nonce: [UInt8]
  public let sealed: [UInt8]

  init(nonce: [UInt8], sealed: [UInt8]) {
    precondition(nonce.count == Self.nonceSize && sealed.count == Self.sealedSize)
    self.nonce = nonce
    self.sealed = sealed
  }

  /// `key` under `wrappingKey`; `binding` says what the wrap is for (its purpose, the library,
  /// the epoch), so that a wrap moved to another place in an envelope does not open there.
  public init(_ key: SecretKey, under wrappingKey: SecretKey, binding: [UInt8]) {
    self.init(
      key, under: wrappingKey, binding: binding, nonce: SecretKey.randomBytes(Self.nonceSize))
  }

  init(_ key: SecretKey, under wrappingKey: SecretKey, binding: [UInt8], nonce: [UInt8]) {
    var sealed = [UInt8](repeating: 0, count: Self.sealedSize)
    var length: UInt64 = 0
    _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
      &sealed, &length, key.bytes, UInt64(SecretKey.size), binding, UInt64(binding.count), nil,
      nonce, wrappingKey.bytes)
    self.init(nonce: nonce, sealed: sealed)
  }

  /// The key, or nil when `wrappingKey` or `binding` is not the one it was wrapped with (or a
  /// byte of it changed): the caller says which of these it means.
  public func unwrap(under wrappingKey: SecretKey, binding: [UInt8]) -> SecretKey? {
    var out = [UInt8](repeating: 0, count: SecretKey.size)
    var length: UInt64 = 0
    let status = crypto_aead_xchacha20poly1305_ietf_decrypt(
      &out, &length, nil, sealed, UInt64(sealed.count), binding, UInt64(binding.count), nonce,
      wrappingKey.bytes)
    guard status == 0, length == UInt64(SecretKey.size) else { return nil }
    return SecretKey(bytes: out)
  }

  var encoded: [UInt8] { nonce + sealed }
}
