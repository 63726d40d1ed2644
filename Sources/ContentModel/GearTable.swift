import CSodium

/// The 256 random 64-bit words of the gear rolling hash that ``ContentChunker`` cuts by.
///
/// Derived from a seed with BLAKE2b, so every device computes the same table for a library
/// and a keyed library's boundaries depend on its key.
public struct GearTable: Sendable, Hashable {
  /// The table, and the same words shifted left by one, for the two-bytes-a-step loop.
  let words: [UInt64]
  let shifted: [UInt64]

  public init(seed: [UInt8]) {
    precondition(sodium_init() >= 0)
    var words: [UInt64] = []
    words.reserveCapacity(256)
    var counter: UInt32 = 0
    let key = Array(seed.prefix(Int(crypto_generichash_blake2b_KEYBYTES_MAX)))
    while words.count < 256 {
      var block = [UInt8](repeating: 0, count: 64)
      var message = Array("docsync gear".utf8)
      withUnsafeBytes(of: counter.littleEndian) { message.append(contentsOf: $0) }
      _ = crypto_generichash_blake2b(
        &block, block.count, message, UInt64(message.count), key.isEmpty ? nil : key, key.count)
      for index in 0..<8 {
        var word: UInt64 = 0
        for byte in block[(index * 8)..<(index * 8 + 8)] { word = word << 8 | UInt64(byte) }
        words.append(word)
      }
      counter += 1
    }
    self.words = words
    shifted = words.map { $0 << 1 }
  }
}
