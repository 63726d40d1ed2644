import CZstd

/// Compresses and expands stored objects with zstd, keeping one compression and one
/// decompression context for all the objects one task handles.
///
/// Not thread-safe: one per task or thread (a context is about a megabyte, made once).
public final class ObjectCompressor {
  private let compression: OpaquePointer
  private let decompression: OpaquePointer
  public let level: Int32

  /// Level 3, zstd's default: on this project's machines about 10 % of a core per 100 MiB/s of
  /// text, and it gives up quickly on bytes that do not compress.
  public init(level: Int32 = 3) {
    compression = ZSTD_createCCtx()
    decompression = ZSTD_createDCtx()
    self.level = level
  }

  deinit {
    ZSTD_freeCCtx(compression)
    ZSTD_freeDCtx(decompression)
  }

  /// The stored form of `plain`: zstd when it saves at least 1/32 of the bytes (so that
  /// incompressible chunks cost no expansion when read), raw otherwise.
  public func frame(_ plain: UnsafeRawBufferPointer) -> [UInt8] {
    let bound = ZSTD_compressBound(plain.count)
    var out = [UInt8](repeating: 0, count: bound + 1)
    out[0] = ObjectFrame.zstd.rawValue
    let written = out.withUnsafeMutableBytes { buffer in
      ZSTD_compressCCtx(
        compression, buffer.baseAddress! + 1, bound, plain.baseAddress, plain.count, level)
    }
    if ZSTD_isError(written) == 0 && written < plain.count - plain.count / 32 {
      // A copy of its own size: `removeLast` would keep the whole bound's capacity, and a
      // batch of small frames then held a quarter of a MiB each (312 MiB of a push's peak).
      return Array(out[0..<(1 + written)])
    }
    var raw: [UInt8] = [ObjectFrame.raw.rawValue]
    raw.reserveCapacity(plain.count + 1)
    raw.append(contentsOf: plain)
    return raw
  }

  public func frame(_ plain: [UInt8]) -> [UInt8] {
    plain.withUnsafeBytes { frame($0) }
  }

  /// The plain bytes of a stored object, refusing a frame this docsync does not know, one that
  /// is damaged, and one that would expand past `maximumSize` (a chunk cannot be larger than
  /// the chunker's maximum: nothing from a hub may make a device allocate without bound).
  public func plain(_ framed: [UInt8], maximumSize: Int) throws(ManifestError) -> [UInt8] {
    guard let tag = framed.first else { throw .truncated }
    switch ObjectFrame(rawValue: tag) {
    case .raw:
      guard framed.count - 1 <= maximumSize else { throw .tooLarge(framed.count - 1) }
      return Array(framed[1...])
    case .zstd:
      let declared = framed.withUnsafeBytes {
        ZSTD_getFrameContentSize($0.baseAddress! + 1, $0.count - 1)
      }
      guard declared != czstd_content_size_unknown(), declared != czstd_content_size_error()
      else { throw .malformed("a compressed object without its size") }
      guard declared <= UInt64(maximumSize) else { throw .tooLarge(Int(clamping: declared)) }
      var out = [UInt8](repeating: 0, count: Int(declared))
      let written = out.withUnsafeMutableBytes { target in
        framed.withUnsafeBytes { source in
          ZSTD_decompressDCtx(
            decompression, target.baseAddress, target.count, source.baseAddress! + 1,
            source.count - 1)
        }
      }
      guard ZSTD_isError(written) == 0, written == Int(declared) else {
        throw .malformed("a compressed object that does not expand to its size")
      }
      return out
    case nil:
      throw .unknownFormat(tag)
    }
  }
}
