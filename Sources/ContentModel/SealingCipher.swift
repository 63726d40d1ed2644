import CBlake3
import Crypto
import Foundation

/// The authenticated encryption of sealed objects and records' fields: AES-256-GCM
/// (swift-crypto, BoringSSL's AES-NI and VAES code) under a key of its own for every seal,
/// derived from the sealing key and the first 12 bytes of a random 24-byte nonce (BLAKE3 in
/// keyed mode); the other 12 bytes are GCM's nonce.
///
/// Why: GCM alone allows random nonces for only about 2³² seals per key (96 bits), and a
/// repeated nonce gives away its authentication key; a key per seal makes the nonce
/// effectively 192 bits, as XChaCha20 does for ChaCha20 (and XAES-256-GCM for AES). AES-GCM
/// because it seals 64 KiB chunks about four times as fast as libsodium's
/// XChaCha20-Poly1305 on this project's machines (`bench-content`); the derivation costs one
/// BLAKE3 block and an AES key schedule per seal.
enum SealingCipher {
  static let nonceSize = 24
  static let tagSize = 16

  /// The ciphertext of `message`, then its tag.
  static func seal(
    _ message: UnsafeRawBufferPointer, key: SecretKey, nonce: ArraySlice<UInt8>,
    associated: [UInt8], into out: inout [UInt8]
  ) {
    // Throws only for a nonce that is not 12 bytes or a key that is not 16, 24 or 32 bytes.
    let sealed = try! AES.GCM.seal(
      message, using: subkey(key, nonce), nonce: try! AES.GCM.Nonce(data: nonce.suffix(12)),
      authenticating: associated)
    out.append(contentsOf: sealed.ciphertext)
    out.append(contentsOf: sealed.tag)
  }

  /// The message of `sealed` (ciphertext then tag), or nil when it does not open: another key,
  /// nonce or associated data, or a changed byte.
  static func open(
    _ sealed: ArraySlice<UInt8>, key: SecretKey, nonce: ArraySlice<UInt8>, associated: [UInt8]
  ) -> [UInt8]? {
    guard sealed.count >= tagSize,
      let box = try? AES.GCM.SealedBox(
        nonce: AES.GCM.Nonce(data: nonce.suffix(12)), ciphertext: sealed.dropLast(tagSize),
        tag: sealed.suffix(tagSize)),
      let plain = try? AES.GCM.open(box, using: subkey(key, nonce), authenticating: associated)
    else { return nil }
    return [UInt8](plain)
  }

  static func subkey(_ key: SecretKey, _ nonce: ArraySlice<UInt8>) -> SymmetricKey {
    var hasher = blake3_hasher()
    key.bytes.withUnsafeBufferPointer { blake3_hasher_init_keyed(&hasher, $0.baseAddress) }
    let prefix = Array(nonce.prefix(12))
    blake3_hasher_update(&hasher, prefix, prefix.count)
    var out = [UInt8](repeating: 0, count: 32)
    blake3_hasher_finalize(&hasher, &out, 32)
    return SymmetricKey(data: out)
  }
}
