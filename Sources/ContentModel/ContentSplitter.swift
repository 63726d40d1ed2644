/// Turns a stream of content into chunks and their manifest entries, as it arrives.
///
/// The caller feeds the content in buffers of any size; each chunk is handed out (its bytes
/// and its entry) as soon as its boundary is decided, so a file of any size goes through in
/// memory of about two maximum chunks beside the caller's buffer.
public struct ContentSplitter {
  public let chunker: ContentChunker
  public let hasher: ObjectHasher
  /// The entries of the chunks handed out so far, in order.
  public private(set) var entries: [ManifestEntry] = []
  private var pending: [UInt8] = []
  private var start = 0

  public init(chunker: ContentChunker = ContentChunker(), hasher: ObjectHasher = ObjectHasher()) {
    self.chunker = chunker
    self.hasher = hasher
    pending.reserveCapacity(2 * chunker.parameters.maximum)
  }

  /// Takes the next bytes of the content; `emit` gets every chunk whose end is decided.
  public mutating func append<E: Error>(
    _ bytes: UnsafeRawBufferPointer,
    _ emit: (UnsafeRawBufferPointer, ManifestEntry) throws(E) -> Void
  ) throws(E) {
    var offset = 0
    let maximum = chunker.parameters.maximum
    while offset < bytes.count {
      // Straight from the caller's buffer while nothing is pending: no copy for most bytes.
      if pending.count == start && bytes.count - offset >= maximum {
        let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
        let length = chunker.cut(rest, isFinal: false)!
        try emitChunk(UnsafeRawBufferPointer(rebasing: rest[0..<length]), emit)
        offset += length
        continue
      }
      let take = min(bytes.count - offset, maximum - (pending.count - start))
      pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + take)]))
      offset += take
      try cutPending(isFinal: false, emit)
      // What is still pending came from this buffer, and enough of it follows for the direct
      // path: it is read from the buffer again, so that only a seam between two buffers is
      // copied, not every byte after it (a copy of each GiB on the chunker's thread).
      let leftover = pending.count - start
      if leftover > 0, leftover <= take, bytes.count - (offset - leftover) >= maximum {
        offset -= leftover
        pending.removeAll(keepingCapacity: true)
        start = 0
      }
    }
  }

  /// Ends the content: hands out the last chunks and returns every entry, in order. Empty
  /// content is one chunk of no bytes.
  public mutating func finish<E: Error>(
    _ emit: (UnsafeRawBufferPointer, ManifestEntry) throws(E) -> Void
  ) throws(E) -> [ManifestEntry] {
    try cutPending(isFinal: true, emit)
    if entries.isEmpty {
      try emitChunk(UnsafeRawBufferPointer(start: nil, count: 0), emit)
    }
    return entries
  }

  private mutating func cutPending<E: Error>(
    isFinal: Bool, _ emit: (UnsafeRawBufferPointer, ManifestEntry) throws(E) -> Void
  ) throws(E) {
    while start < pending.count {
      let cut = pending.withUnsafeBytes {
        chunker.cut(UnsafeRawBufferPointer(rebasing: $0[start...]), isFinal: isFinal)
      }
      guard let length = cut else { break }
      let chunk = Array(pending[start..<(start + length)])
      start += length
      // withUnsafeBytes rethrows untyped errors: the typed one travels out as a Result.
      var outcome: Result<Void, E> = .success(())
      chunk.withUnsafeBytes { bytes in
        do throws(E) { try emitChunk(bytes, emit) } catch { outcome = .failure(error) }
      }
      try outcome.get()
    }
    if start == pending.count {
      pending.removeAll(keepingCapacity: true)
      start = 0
    } else if start > 0 {
      pending.removeFirst(start)
      start = 0
    }
  }

  private mutating func emitChunk<E: Error>(
    _ bytes: UnsafeRawBufferPointer,
    _ emit: (UnsafeRawBufferPointer, ManifestEntry) throws(E) -> Void
  ) throws(E) {
    let entry = ManifestEntry(id: hasher.id(of: bytes, kind: .chunk), size: UInt64(bytes.count))
    entries.append(entry)
    try emit(bytes, entry)
  }
}
