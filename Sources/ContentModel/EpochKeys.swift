import CBlake3
import DocumentModel

/// The keys of one key epoch of an encrypted library: everything made while the epoch is
/// current is named and sealed with them.
///
/// An epoch key is random (never derived from the master key or another epoch), so a device
/// removed before an epoch began has no way to it; every purpose gets its own subkey
/// (``KeyDerivation``), so no key is used for two things.
public struct EpochKeys: Sendable {
  /// Epochs count from 1; a new one starts when a device is removed.
  public let epoch: UInt32
  /// Object ids and chunk boundaries for content recorded in this epoch.
  public let content: ContentKeys
  /// Seals chunks and manifest nodes (``ObjectSealer``).
  public let objectSealing: SecretKey
  /// Seals records' private fields (``RecordSealer``).
  public let recordSealing: SecretKey
  /// Keys record ids (``recordID(ofEncoding:)``).
  public let recordIDs: SecretKey

  public init(epoch: UInt32, key: SecretKey) {
    self.epoch = epoch
    content = ContentKeys(
      idKey: key.derive(KeyDerivation.objectIDs).bytes,
      gearSeed: key.derive(KeyDerivation.boundaries).bytes)
    objectSealing = key.derive(KeyDerivation.objectSealing)
    recordSealing = key.derive(KeyDerivation.recordSealing)
    recordIDs = key.derive(KeyDerivation.recordIDs)
  }

  /// The id of an encrypted library's record whose plain canonical encoding is `encoding`:
  /// BLAKE3 keyed by the record-ids subkey, where a plain library takes its SHA-256, so that a
  /// hub cannot confirm a guess at a record (a path, a time) by hashing it.
  public func recordID(ofEncoding encoding: [UInt8]) -> VersionID {
    var hasher = blake3_hasher()
    recordIDs.bytes.withUnsafeBufferPointer { blake3_hasher_init_keyed(&hasher, $0.baseAddress) }
    blake3_hasher_update(&hasher, encoding, encoding.count)
    var out = [UInt8](repeating: 0, count: 32)
    blake3_hasher_finalize(&hasher, &out, 32)
    return VersionID(Digest256(bytes: out)!)
  }
}
