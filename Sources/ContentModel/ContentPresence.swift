/// Which chunks of one content a device holds: the state of a partial working file (files on
/// demand), kept beside it so that what was fetched survives a restart.
///
/// A bit per chunk, in manifest order. A chunk counts as present only once its bytes were
/// checked against its id and written where they belong; a restart trusts the bits only for
/// a file whose identity (size, times) is what it was when they were written, and the reader
/// checks each chunk again before serving it (the issue's "checked against its hash before it
/// is served").
///
/// Encoding: format byte 1, the chunk count (LEB128), then the bits, least significant first,
/// padded with zero bits to a whole byte.
public struct ContentPresence: Sendable, Hashable {
  /// The number of chunks of the content.
  public let count: Int
  private var words: [UInt64]
  /// How many chunks are present.
  public private(set) var presentCount: Int

  static let format: UInt8 = 1

  /// No chunk present, of a content of `count` chunks.
  public init(count: Int) {
    precondition(count >= 0)
    self.count = count
    words = Array(repeating: 0, count: (count + 63) / 64)
    presentCount = 0
  }

  public var isComplete: Bool { presentCount == count }
  public var isEmpty: Bool { presentCount == 0 }

  public func contains(_ index: Int) -> Bool {
    precondition(index >= 0 && index < count)
    return words[index >> 6] & (1 << UInt64(index & 63)) != 0
  }

  /// Marks chunk `index` present; true when it was not.
  @discardableResult
  public mutating func insert(_ index: Int) -> Bool {
    precondition(index >= 0 && index < count)
    let bit: UInt64 = 1 << UInt64(index & 63)
    guard words[index >> 6] & bit == 0 else { return false }
    words[index >> 6] |= bit
    presentCount += 1
    return true
  }

  /// Marks chunk `index` absent (its bytes were found damaged, or the space given back).
  public mutating func remove(_ index: Int) {
    precondition(index >= 0 && index < count)
    let bit: UInt64 = 1 << UInt64(index & 63)
    guard words[index >> 6] & bit != 0 else { return }
    words[index >> 6] &= ~bit
    presentCount -= 1
  }

  /// The indices in `indices` that are not present, in order: what a read must fetch.
  public func missing(_ indices: Range<Int>) -> [Int] {
    indices.filter { !contains($0) }
  }

  public func encoded() -> [UInt8] {
    var out: [UInt8] = [Self.format]
    LEB128.append(UInt64(count), to: &out)
    let byteCount = (count + 7) / 8
    out.reserveCapacity(out.count + byteCount)
    for index in 0..<byteCount {
      out.append(UInt8(truncatingIfNeeded: words[index >> 3] >> UInt64((index & 7) * 8)))
    }
    return out
  }

  /// Decodes and checks: known format, a count that fits, exactly the bytes the count needs,
  /// and no bit set past the last chunk.
  public init(decoding bytes: [UInt8]) throws(ManifestError) {
    var reader = ByteReader(bytes)
    let format = try reader.byte()
    guard format == Self.format else { throw .unknownFormat(format) }
    let declared = try reader.leb128()
    // A chunk is at least one byte and a content at most 2^63: far fewer chunks in practice;
    // this bounds the allocation a malformed count could ask for.
    guard declared <= UInt64(Int32.max) else {
      throw .malformed("a presence map of \(declared) chunks")
    }
    let count = Int(declared)
    let byteCount = (count + 7) / 8
    let body = try reader.bytes(byteCount)
    guard reader.isAtEnd else { throw .malformed("bytes after a presence map") }
    self.init(count: count)
    for (index, byte) in body.enumerated() where byte != 0 {
      for bit in 0..<8 where byte & (1 << UInt8(bit)) != 0 {
        let chunk = index * 8 + bit
        guard chunk < count else { throw .malformed("a presence bit past the last chunk") }
        insert(chunk)
      }
    }
  }
}
