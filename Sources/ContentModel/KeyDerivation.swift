/// The contexts of BLAKE3's `derive_key` that name every subkey of an encrypted library.
///
/// Each is fixed forever: changing one changes every key made from it, so that a library's
/// content would no longer open. `KeyDerivationTests` pins what each gives.
public enum KeyDerivation {
  /// From an epoch key: the key of object ids (``ContentKeys/idKey``, from which
  /// ``ObjectHasher`` derives one BLAKE3 key per kind).
  public static let objectIDs = "docsync 2026-11-29 epoch key: object ids"
  /// From an epoch key: the seed of the gear table, so chunk boundaries depend on the key.
  public static let boundaries = "docsync 2026-11-29 epoch key: chunk boundaries"
  /// From an epoch key: the key that seals content objects (chunks and manifest nodes).
  public static let objectSealing = "docsync 2026-11-29 epoch key: object sealing"
  /// From an epoch key: the key that seals a record's private fields.
  public static let recordSealing = "docsync 2026-11-29 epoch key: record sealing"
  /// From an epoch key: the key of record ids, so a hub cannot confirm a guessed record.
  public static let recordIDs = "docsync 2026-11-29 epoch key: record ids"
  /// From the master key: the key that wraps each epoch key in the envelope.
  public static let epochWrapping = "docsync 2026-11-29 master key: epoch key wrapping"
  /// From the master key: the seed of the Ed25519 key that signs the envelope.
  public static let envelopeSigning = "docsync 2026-11-29 master key: envelope signing"
  /// From a recovery key's 20 bytes: the key that wraps the master key.
  public static let recoveryWrapping = "docsync 2026-11-29 recovery key: master key wrapping"

  public static let all = [
    objectIDs, boundaries, objectSealing, recordSealing, recordIDs, epochWrapping,
    envelopeSigning, recoveryWrapping,
  ]
}
