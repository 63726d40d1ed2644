import DocumentModel

/// Seals the private fields of a version record (path, name, size, times, mode, xattrs: the
/// caller's canonical encoding of them) as one blob, and opens it: ``SealingCipher`` with the
/// record's id and its parents' ids as associated data, so that the blob of one record put into
/// another (moved to another document, replayed as a new version with other parents) does not
/// open. The record's id cannot be a hash of the blob (the blob names it): it is a keyed hash
/// of the plain record, which a device checks after opening.
///
/// Sealed fields: format (1), the epoch (4 bytes, little-endian), a random 24-byte nonce, then
/// the ciphertext and its tag. The fields are padded with ``Padme`` and to a multiple of 64
/// bytes, so that short names of different lengths look alike.
public struct RecordSealer: Sendable {
  public static let format: UInt8 = 1
  static let headerSize = 1 + 4 + SealingCipher.nonceSize
  public static let overhead = headerSize + SealingCipher.tagSize
  static let bucket = 64

  public let epoch: UInt32
  let key: SecretKey

  public init(keys: EpochKeys) {
    epoch = keys.epoch
    key = keys.recordSealing
  }

  /// The size the hub sees for fields of `length` bytes.
  public static func sealedSize(_ length: Int) -> Int {
    overhead + Padme.roundUp(Padme.size(length + 1), bucket)
  }

  public func seal(_ fields: [UInt8], record: VersionID, parents: [VersionID]) -> [UInt8] {
    seal(
      fields, record: record, parents: parents,
      nonce: SecretKey.randomBytes(SealingCipher.nonceSize)
    )
  }

  func seal(_ fields: [UInt8], record: VersionID, parents: [VersionID], nonce: [UInt8])
    -> [UInt8]
  {
    let padded = Self.sealedSize(fields.count) - Self.overhead
    var message = fields
    Padme.appendPadding(to: &message, length: fields.count, paddedLength: padded)
    var out = [Self.format]
    KeyEnvelope.append(UInt64(epoch), 4, to: &out)
    out += nonce
    message.withUnsafeBytes {
      SealingCipher.seal(
        $0, key: key, nonce: nonce[...],
        associated: Self.associatedData(epoch: epoch, record: record, parents: parents),
        into: &out)
    }
    return out
  }

  /// The fields sealed in `sealed`, which must belong to `record` with exactly `parents`.
  public static func open(
    _ sealed: [UInt8], record: VersionID, parents: [VersionID], keyring: LibraryKeyring
  ) throws(KeyError) -> [UInt8] {
    guard let first = sealed.first, first == format else {
      throw .recordRefused(
        sealed.isEmpty ? "it is empty" : "format \(sealed[0]), which this docsync does not know")
    }
    guard sealed.count >= overhead + bucket else { throw .recordRefused("it ends early") }
    let epoch =
      UInt32(sealed[1]) | UInt32(sealed[2]) << 8 | UInt32(sealed[3]) << 16 | UInt32(sealed[4]) << 24
    guard let keys = keyring.keys(for: epoch) else {
      throw .recordRefused("sealed in key epoch \(epoch), which this device does not have")
    }
    guard
      var plain = SealingCipher.open(
        sealed[headerSize...], key: keys.recordSealing, nonce: sealed[5..<headerSize],
        associated: associatedData(epoch: epoch, record: record, parents: parents))
    else {
      throw .recordRefused(
        "record \(record.shortHex)'s fields do not open (damaged, or moved from another record)")
    }
    guard let fieldsLength = plain.withUnsafeBytes({ Padme.unpaddedLength($0) }) else {
      throw .recordRefused("its fields have no padding")
    }
    plain.removeLast(plain.count - fieldsLength)
    return plain
  }

  /// The record and its parents (in id order: they are a set), bound to the epoch.
  static func associatedData(epoch: UInt32, record: VersionID, parents: [VersionID]) -> [UInt8] {
    var out = Array("docsync record".utf8) + [format]
    KeyEnvelope.append(UInt64(epoch), 4, to: &out)
    out += record.bytes
    KeyEnvelope.append(UInt64(parents.count), 4, to: &out)
    for parent in parents.sorted() { out += parent.bytes }
    return out
  }
}
