import CSodium
import CXXHash

/// The SQLite hub's check of an object's stored bytes: finds damage to its own copy (a failing
/// disk, not an adversary: a device checks every object against its id, which only it can
/// compute).
///
/// Objects put before session 42 carry 8 bytes of BLAKE2b, and keep them; new ones carry a tag
/// byte and XXH64, which costs a fraction of BLAKE2b's processor time on every put and every
/// fetch (on the embedded hub, the device's own). The length tells the two apart.
enum ObjectCheck {
  /// The tag of an XXH64 check, its first byte.
  static let xxHash64Tag: UInt8 = 1

  /// The check stored with `bytes` from now on.
  static func of(_ bytes: [UInt8]) -> [UInt8] {
    xxHash64(XXHash64.hash(bytes))
  }

  /// The check of `prefix` followed by `rest`, as ``of(_:)`` of the two end to end, without
  /// putting them together: a chunk taken in place, whose frame's first byte is not in its file.
  static func of(_ prefix: [UInt8], _ rest: UnsafeRawBufferPointer) -> [UInt8] {
    xxHash64(hash64(prefix, rest))
  }

  /// The XXH64 value of `prefix` followed by `rest`.
  static func hash64(_ prefix: [UInt8], _ rest: UnsafeRawBufferPointer) -> UInt64 {
    let state = XXH64_createState()!
    defer { XXH64_freeState(state) }
    XXH64_reset(state, 0)
    prefix.withUnsafeBytes { _ = XXH64_update(state, $0.baseAddress, $0.count) }
    XXH64_update(state, rest.baseAddress, rest.count)
    return XXH64_digest(state)
  }

  /// The stored form of an XXH64 check of value `hash`.
  static func xxHash64(_ hash: UInt64) -> [UInt8] {
    [xxHash64Tag] + withUnsafeBytes(of: hash.littleEndian) { Array($0) }
  }

  /// Whether `bytes` are the bytes `check` was made of, whichever kind of check it is. A check
  /// of a kind this hub does not know fails: the object is treated as damaged and wanted again.
  static func matches(_ bytes: [UInt8], _ check: [UInt8]) -> Bool {
    switch check.count {
    case 8: return blake2b(bytes) == check
    case 9 where check[0] == xxHash64Tag: return of(bytes) == check
    default: return false
    }
  }

  /// sodium_init picks the fastest BLAKE2b this processor runs; once per process.
  private static let sodiumReady = sodium_init() >= 0

  /// The check of objects put before XXH64: the first 8 bytes of a 16-byte BLAKE2b.
  static func blake2b(_ bytes: [UInt8]) -> [UInt8] {
    precondition(sodiumReady)
    var out = [UInt8](repeating: 0, count: 16)
    let status = crypto_generichash_blake2b(&out, 16, bytes, UInt64(bytes.count), nil, 0)
    precondition(status == 0)
    return Array(out.prefix(8))
  }
}
