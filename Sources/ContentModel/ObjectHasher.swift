import CBlake3
import CSodium
import DocumentModel

/// Names content objects by a hash of their plain bytes, separated by their kind and keyed by
/// the library's id key, in one of the ``ObjectIDScheme``s: BLAKE3 for new content, BLAKE2b
/// for trees recorded before it.
///
/// BLAKE3 because its SIMD kernels (SSE4.1, AVX2, AVX-512, picked at run time) hash a chunk
/// several times faster than BLAKE2b or SHA-256 on one core, so that cutting and naming content
/// is not a push's bottleneck; keyed natively, which end-to-end encryption needs.
public struct ObjectHasher: Sendable {
  public let scheme: ObjectIDScheme
  /// BLAKE2b's key: the library's id key, or empty.
  let key: [UInt8]
  /// BLAKE3's keys, one per kind, derived from the library's id key (or from nothing for a
  /// plain library), so that a chunk whose bytes spell a node never shares its id.
  let chunkKey: [UInt8]
  let nodeKey: [UInt8]

  public init(scheme: ObjectIDScheme = .current, keys: ContentKeys = .plain) {
    precondition(sodium_init() >= 0)
    self.scheme = scheme
    key = keys.idKey
    chunkKey = Self.derive(ObjectKind.chunk, from: keys.idKey)
    nodeKey = Self.derive(ObjectKind.node, from: keys.idKey)
  }

  /// BLAKE3's key derivation, with a context string fixed for docsync and the kind.
  static func derive(_ kind: ObjectKind, from material: [UInt8]) -> [UInt8] {
    var hasher = blake3_hasher()
    blake3_hasher_init_derive_key(&hasher, "docsync 2026-11-29 object id: \(kind.label)")
    material.withUnsafeBytes { blake3_hasher_update(&hasher, $0.baseAddress, $0.count) }
    var out = [UInt8](repeating: 0, count: 32)
    blake3_hasher_finalize(&hasher, &out, 32)
    return out
  }

  /// The id of the object of `kind` whose bytes are `bytes`.
  public func id(of bytes: UnsafeRawBufferPointer, kind: ObjectKind) -> ObjectID {
    var out = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
    withUnsafeMutableBytes(of: &out) { digest in
      let digest = digest.baseAddress!.assumingMemoryBound(to: UInt8.self)
      switch scheme {
      case .blake3:
        var hasher = blake3_hasher()
        (kind == .chunk ? chunkKey : nodeKey).withUnsafeBufferPointer {
          blake3_hasher_init_keyed(&hasher, $0.baseAddress)
        }
        blake3_hasher_update(&hasher, bytes.baseAddress, bytes.count)
        blake3_hasher_finalize(&hasher, digest, 32)
      case .blake2b:
        let personal = kind.personal
        key.withUnsafeBufferPointer { key in
          personal.withUnsafeBufferPointer { personal in
            _ = crypto_generichash_blake2b_salt_personal(
              digest, 32, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
              UInt64(bytes.count), key.isEmpty ? nil : key.baseAddress, key.count, nil,
              personal.baseAddress)
          }
        }
      }
    }
    return withUnsafeBytes(of: &out) { ObjectID(bytes: $0)! }
  }

  public func id(of bytes: [UInt8], kind: ObjectKind) -> ObjectID {
    bytes.withUnsafeBytes { id(of: $0, kind: kind) }
  }
}
