import CSodium

/// Seals content objects (chunks and manifest nodes) of an encrypted library, and opens them:
/// XChaCha20-Poly1305 over the object's stored frame (compressed or raw, then padded with
/// ``Padme``), with the object's kind, id and key epoch as associated data, so that an object a
/// hub damaged, swapped for another or moved to another epoch does not open.
///
/// Sealed frame: `0x80` (``ObjectFrame``'s high bit: sealed, XChaCha20-Poly1305), the epoch
/// (4 bytes, little-endian), a random 24-byte nonce, then the ciphertext and its 16-byte tag.
///
/// XChaCha20-Poly1305 because its 192-bit nonces may be random: every device seals on its own
/// with no counter to share, and random 96-bit nonces (AES-GCM, ChaChaPoly) would have to be
/// retired after about 2³² objects per key; libsodium's AVX2 ChaCha20 keeps it fast without
/// AES instructions (`bench-content` measures both). Random rather than derived from the id:
/// a nonce derived from the id would make a repeated seal of one object repeat its keystream
/// whenever two devices' framing of it differed (another zstd, another padding rule).
public struct ObjectSealer: Sendable {
  public static let frameByte: UInt8 = 0x80
  static let nonceSize = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
  static let tagSize = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
  static let headerSize = 1 + 4 + nonceSize
  /// Bytes a sealed frame adds besides the padding.
  public static let overhead = headerSize + tagSize

  public let epoch: UInt32
  let key: SecretKey

  /// Seals with the keys of `keys`' epoch (the library's current one, for anything new).
  public init(keys: EpochKeys) {
    precondition(sodium_init() >= 0)
    epoch = keys.epoch
    key = keys.objectSealing
  }

  /// The sealed form of `frame` (what ``ObjectCompressor/frame(_:)`` gives) for object `id`.
  public func seal(frame: [UInt8], id: ObjectID, kind: ObjectKind) -> [UInt8] {
    seal(frame: frame, id: id, kind: kind, nonce: SecretKey.randomBytes(Self.nonceSize))
  }

  func seal(frame: [UInt8], id: ObjectID, kind: ObjectKind, nonce: [UInt8]) -> [UInt8] {
    var out = [UInt8]()
    let padded = Padme.size(frame.count + 1)
    out.reserveCapacity(Self.headerSize + padded + Self.tagSize)
    out.append(Self.frameByte)
    KeyEnvelope.append(UInt64(epoch), 4, to: &out)
    out += nonce
    out += frame
    Padme.appendPadding(to: &out, length: frame.count, paddedLength: padded)
    out.append(contentsOf: repeatElement(0, count: Self.tagSize))
    let associated = Self.associatedData(epoch: epoch, id: id, kind: kind)
    out.withUnsafeMutableBufferPointer { buffer in
      let message = buffer.baseAddress! + Self.headerSize
      var length: UInt64 = 0
      // In place: libsodium allows the ciphertext to overwrite the message.
      _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
        message, &length, message, UInt64(padded), associated, UInt64(associated.count), nil,
        buffer.baseAddress! + 5, key.bytes)
    }
    return out
  }

  /// The epoch a sealed frame says it was sealed in, to pick its keys; nil if it is no sealed
  /// frame. (What it says is checked when it opens: the epoch is associated data.)
  public static func epoch(of sealed: [UInt8]) -> UInt32? {
    guard sealed.count >= headerSize, sealed[0] == frameByte else { return nil }
    return UInt32(sealed[1]) | UInt32(sealed[2]) << 8 | UInt32(sealed[3]) << 16
      | UInt32(sealed[4]) << 24
  }

  /// The frame inside `sealed`, which must be object `id` of `kind`, sealed in an epoch of
  /// `keyring`, and no larger than an object of `maximumSize` plain bytes can be; any other
  /// object, any changed byte, a truncation, refuses.
  public static func open(
    _ sealed: [UInt8], id: ObjectID, kind: ObjectKind, keyring: LibraryKeyring,
    maximumSize: Int
  ) throws(ManifestError) -> [UInt8] {
    guard let first = sealed.first else { throw .truncated }
    guard first == frameByte else {
      throw first & 0x80 != 0
        ? .unknownFormat(first) : .doesNotMatch(id, "it is not sealed, in an encrypted library")
    }
    guard let epoch = epoch(of: sealed), sealed.count >= overhead + 1 else { throw .truncated }
    guard let keys = keyring.keys(for: epoch) else {
      throw .doesNotMatch(id, "sealed in key epoch \(epoch), which this device does not have")
    }
    let length = sealed.count - overhead
    guard length <= Padme.size(maximumSize + 2) else { throw .tooLarge(length) }
    var plain = [UInt8](repeating: 0, count: length)
    let associated = associatedData(epoch: epoch, id: id, kind: kind)
    let status = sealed.withUnsafeBufferPointer { buffer in
      crypto_aead_xchacha20poly1305_ietf_decrypt(
        &plain, nil, nil, buffer.baseAddress! + headerSize, UInt64(length + tagSize),
        associated, UInt64(associated.count), buffer.baseAddress! + 5, keys.objectSealing.bytes)
    }
    guard status == 0 else {
      throw .doesNotMatch(id, "it does not open with the library's keys (damaged or swapped)")
    }
    guard let frameLength = plain.withUnsafeBytes({ Padme.unpaddedLength($0) }), frameLength > 0
    else { throw .malformed("a sealed object without its padding") }
    plain.removeLast(plain.count - frameLength)
    return plain
  }

  static func associatedData(epoch: UInt32, id: ObjectID, kind: ObjectKind) -> [UInt8] {
    var out = Array("docsync object".utf8) + [frameByte]
    KeyEnvelope.append(UInt64(epoch), 4, to: &out)
    return out + [kind.rawValue] + id.bytes
  }
}
