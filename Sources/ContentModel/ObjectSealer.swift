/// Seals content objects (chunks and manifest nodes) of an encrypted library, and opens them:
/// ``SealingCipher`` (AES-256-GCM under a key of its own per seal) over the object's stored
/// frame (compressed or raw, then padded with ``Padme``), with the object's kind, id and key
/// epoch as associated data, so that an object a hub damaged, swapped for another or moved to
/// another epoch does not open.
///
/// Sealed frame: `0x80` (``ObjectFrame``'s high bit: sealed, suite 0), the epoch (4 bytes,
/// little-endian), a random 24-byte nonce, then the ciphertext and its 16-byte tag.
///
/// Random nonces, not derived from the id: every device seals on its own with no counter to
/// share, and a nonce derived from the id would repeat whenever one object is sealed twice
/// (a repair, two devices uploading one chunk), harmless only while the framed bytes are
/// exactly the same, which a new zstd or framing rule would silently break.
public struct ObjectSealer: Sendable {
  public static let frameByte: UInt8 = 0x80
  static let nonceSize = SealingCipher.nonceSize
  static let tagSize = SealingCipher.tagSize
  static let headerSize = 1 + 4 + nonceSize
  /// Bytes a sealed frame adds besides the padding.
  public static let overhead = headerSize + tagSize

  public let epoch: UInt32
  let key: SecretKey

  /// Seals with the keys of `keys`' epoch (the library's current one, for anything new).
  public init(keys: EpochKeys) {
    epoch = keys.epoch
    key = keys.objectSealing
  }

  /// The sealed form of `frame` (what ``ObjectCompressor/frame(_:)`` gives) for object `id`.
  public func seal(frame: [UInt8], id: ObjectID, kind: ObjectKind) -> [UInt8] {
    seal(frame: frame, id: id, kind: kind, nonce: SecretKey.randomBytes(Self.nonceSize))
  }

  func seal(frame: [UInt8], id: ObjectID, kind: ObjectKind, nonce: [UInt8]) -> [UInt8] {
    let padded = Padme.size(frame.count + 1)
    var message = frame
    message.reserveCapacity(padded)
    Padme.appendPadding(to: &message, length: frame.count, paddedLength: padded)
    var out = [Self.frameByte]
    out.reserveCapacity(Self.headerSize + padded + Self.tagSize)
    KeyEnvelope.append(UInt64(epoch), 4, to: &out)
    out += nonce
    message.withUnsafeBytes {
      SealingCipher.seal(
        $0, key: key, nonce: nonce[...],
        associated: Self.associatedData(epoch: epoch, id: id, kind: kind), into: &out)
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
    guard
      var plain = SealingCipher.open(
        sealed[headerSize...], key: keys.objectSealing, nonce: sealed[5..<headerSize],
        associated: associatedData(epoch: epoch, id: id, kind: kind))
    else {
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
