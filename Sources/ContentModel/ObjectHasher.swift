import CSodium
import DocumentModel

/// Names content objects: BLAKE2b-256 of their plain bytes, personalised by their kind and
/// keyed by the library's id key.
///
/// BLAKE2b rather than SHA-256: about twice as fast on processors without SHA instructions
/// (this project's machines have none), and keyed natively, which end-to-end encryption needs.
public struct ObjectHasher: Sendable {
  let key: [UInt8]

  public init(keys: ContentKeys = .plain) {
    precondition(sodium_init() >= 0)
    key = keys.idKey
  }

  /// The id of the object of `kind` whose bytes are `bytes`.
  public func id(of bytes: UnsafeRawBufferPointer, kind: ObjectKind) -> ObjectID {
    var out = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
    let personal = kind.personal
    withUnsafeMutableBytes(of: &out) { digest in
      key.withUnsafeBufferPointer { key in
        personal.withUnsafeBufferPointer { personal in
          _ = crypto_generichash_blake2b_salt_personal(
            digest.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
            bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count),
            key.isEmpty ? nil : key.baseAddress, key.count, nil, personal.baseAddress)
        }
      }
    }
    return withUnsafeBytes(of: &out) { ObjectID(bytes: $0)! }
  }

  public func id(of bytes: [UInt8], kind: ObjectKind) -> ObjectID {
    bytes.withUnsafeBytes { id(of: $0, kind: kind) }
  }
}
