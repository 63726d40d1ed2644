/// The sizes between which ``ContentChunker`` cuts, and the masks of its normalized chunking.
public struct ChunkingParameters: Sendable, Hashable {
  public let minimum: Int
  public let average: Int
  public let maximum: Int
  /// The harder mask, before `average` bytes, and the easier one after: FastCDC's normalized
  /// chunking (level 2), which narrows the spread of sizes around the average without
  /// giving up content-defined boundaries.
  let maskBefore: UInt64
  let maskAfter: UInt64

  /// `average` must be a power of two; `minimum < average < maximum`.
  public init(minimum: Int, average: Int, maximum: Int) {
    precondition(average > 0 && average & (average - 1) == 0, "the average is a power of two")
    precondition(0 < minimum && minimum < average && average < maximum)
    self.minimum = minimum
    self.average = average
    self.maximum = maximum
    let bits = average.trailingZeroBitCount
    maskBefore = Self.mask(bits: bits + 2)
    maskAfter = Self.mask(bits: bits - 2)
  }

  /// `bits` ones just below the top bit. A gear hash's bit k depends on the last k + 1 bytes,
  /// so high bits see a window of about 64 bytes; bit 63 stays out so that the two-bytes-a-step
  /// loop, which checks the hash shifted left by one, sees the same bits.
  static func mask(bits: Int) -> UInt64 {
    ((UInt64(1) << UInt64(bits)) - 1) << UInt64(63 - bits)
  }

  /// 16, 64 and 256 KiB: a one-byte edit moves one or two chunks of about 64 KiB, and a GiB is
  /// about 16,000 chunks, whose manifest is some 600 KiB in about 250 nodes.
  public static let standard = ChunkingParameters(
    minimum: 16 << 10, average: 64 << 10, maximum: 256 << 10)
}
