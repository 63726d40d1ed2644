/// Cuts content into content-defined chunks: FastCDC with normalized chunking.
///
/// A boundary depends only on the bytes of a window before it, so an insertion or a deletion
/// moves the boundaries near it and no others: the chunks after it keep their bytes and their
/// ids. Each chunk starts its hash afresh, which makes the cut a pure function of the bytes
/// from the chunk's start (see ``cut(_:isFinal:)``).
public struct ContentChunker: Sendable {
  public let parameters: ChunkingParameters
  let gear: GearTable

  public init(parameters: ChunkingParameters = .standard, keys: ContentKeys = .plain) {
    self.parameters = parameters
    gear = keys.gear
  }

  /// The length of the chunk that starts at the beginning of `buffer`; nil when `buffer` ends
  /// before a boundary could be decided and more bytes may follow (`isFinal` false): give it at
  /// least ``ChunkingParameters/maximum`` bytes, or the last bytes of the content.
  public func cut(_ buffer: UnsafeRawBufferPointer, isFinal: Bool) -> Int? {
    let count = buffer.count
    let p = parameters
    if count <= p.minimum { return isFinal && count > 0 ? count : nil }
    let limit = min(count, p.maximum)
    let normal = min(limit, p.average)
    let bytes = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
    return gear.words.withUnsafeBufferPointer { words in
      gear.shifted.withUnsafeBufferPointer { shifted in
        let g = words.baseAddress!
        let gs = shifted.baseAddress!
        var hash: UInt64 = 0
        var index = p.minimum
        // Two bytes a step (FastCDC 2020): the hash after the first byte, shifted left by one, is
        // `hash << 2 + gear[a] << 1`; checking it against the mask shifted left by one is the same
        // test, and the second byte completes the step with `+ gear[b]`.
        let before = p.maskBefore
        let beforeShifted = before << 1
        while index + 1 < normal {
          hash = (hash &<< 2) &+ gs[Int(bytes[index])]
          if hash & beforeShifted == 0 { return index + 1 }
          hash = hash &+ g[Int(bytes[index + 1])]
          if hash & before == 0 { return index + 2 }
          index += 2
        }
        if index < normal {
          hash = (hash &<< 1) &+ g[Int(bytes[index])]
          if hash & before == 0 { return index + 1 }
          index += 1
        }
        let after = p.maskAfter
        let afterShifted = after << 1
        while index + 1 < limit {
          hash = (hash &<< 2) &+ gs[Int(bytes[index])]
          if hash & afterShifted == 0 { return index + 1 }
          hash = hash &+ g[Int(bytes[index + 1])]
          if hash & after == 0 { return index + 2 }
          index += 2
        }
        if index < limit {
          hash = (hash &<< 1) &+ g[Int(bytes[index])]
          if hash & after == 0 { return index + 1 }
        }
        // No boundary before the maximum, or the content ends first.
        return limit == p.maximum || isFinal ? limit : nil
      }
    }
  }
}
