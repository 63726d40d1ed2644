/// Reads the fields of an encoding from the front, refusing to run past its end or to accept
/// an integer that does not fit or is not written in its shortest form.
struct ByteReader {
  private let bytes: [UInt8]
  private var offset = 0

  init(_ bytes: [UInt8]) { self.bytes = bytes }

  var isAtEnd: Bool { offset == bytes.count }

  mutating func byte() throws(ManifestError) -> UInt8 {
    guard offset < bytes.count else { throw .truncated }
    defer { offset += 1 }
    return bytes[offset]
  }

  mutating func bytes(_ count: Int) throws(ManifestError) -> ArraySlice<UInt8> {
    guard bytes.count - offset >= count else { throw .truncated }
    defer { offset += count }
    return bytes[offset..<(offset + count)]
  }

  mutating func leb128() throws(ManifestError) -> UInt64 {
    var value: UInt64 = 0
    var shift: UInt64 = 0
    while true {
      let byte = try self.byte()
      let part = UInt64(byte & 0x7f)
      guard shift < 64, shift < 63 || part <= 1 else { throw .malformed("an integer past 64 bits") }
      value |= part << shift
      if byte & 0x80 == 0 {
        // One encoding per value: a trailing zero byte would give one node two ids.
        guard byte != 0 || shift == 0 else {
          throw .malformed("an integer not in its shortest form")
        }
        return value
      }
      shift += 7
    }
  }
}
