/// Reads the few wire types a message header holds, bounds-checked.
struct WireReader {
  let bytes: [UInt8]
  var offset: Int

  static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
    UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
      | UInt32(bytes[offset + 3]) << 24
  }

  mutating func align(to boundary: Int) {
    offset = (offset + boundary - 1) / boundary * boundary
  }

  mutating func byte() -> UInt8? {
    guard offset < bytes.count else { return nil }
    defer { offset += 1 }
    return bytes[offset]
  }

  mutating func uint32() -> UInt32? {
    align(to: 4)
    guard offset + 4 <= bytes.count else { return nil }
    defer { offset += 4 }
    return Self.uint32(bytes, at: offset)
  }

  mutating func string() -> String? {
    guard let length = uint32().map(Int.init), offset + length + 1 <= bytes.count else {
      return nil
    }
    defer { offset += length + 1 }
    return String(decoding: bytes[offset..<offset + length], as: UTF8.self)
  }

  mutating func signature() -> String? {
    guard let length = byte().map(Int.init), offset + length + 1 <= bytes.count else {
      return nil
    }
    defer { offset += length + 1 }
    return String(decoding: bytes[offset..<offset + length], as: UTF8.self)
  }
}
