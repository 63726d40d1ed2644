/// Marshals values in D-Bus's little-endian wire format, each aligned from the message start.
struct WireWriter {
  var bytes: [UInt8] = []

  mutating func align(to boundary: Int) {
    while bytes.count % boundary != 0 { bytes.append(0) }
  }

  mutating func write(_ value: BusValue) {
    switch value {
    case .byte(let byte):
      bytes.append(byte)
    case .uint32(let number):
      align(to: 4)
      withUnsafeBytes(of: number.littleEndian) { bytes += $0 }
    case .int32(let number):
      align(to: 4)
      withUnsafeBytes(of: number.littleEndian) { bytes += $0 }
    case .string(let text), .objectPath(let text):
      let utf8 = Array(text.utf8)
      write(.uint32(UInt32(utf8.count)))
      bytes += utf8
      bytes.append(0)
    case .typeSignature(let text):
      let utf8 = Array(text.utf8)
      bytes.append(UInt8(utf8.count))
      bytes += utf8
      bytes.append(0)
    case .array(let elementSignature, let elements):
      write(.uint32(0))
      let lengthAt = bytes.count - 4
      // The length counts from the first element, after the padding to its alignment, which
      // is there even when the array is empty.
      align(to: Self.alignment(of: elementSignature))
      let start = bytes.count
      for element in elements { write(element) }
      let length = UInt32(bytes.count - start).littleEndian
      withUnsafeBytes(of: length) { bytes.replaceSubrange(lengthAt..<lengthAt + 4, with: $0) }
    case .dictEntry(let key, let value):
      align(to: 8)
      write(key)
      write(value)
    case .variant(let inner):
      write(.typeSignature(inner.signature))
      write(inner)
    }
  }

  /// The alignment of the first type in `signature`.
  static func alignment(of signature: String) -> Int {
    switch signature.first {
    case "y", "g", "v": 1
    case "(", "{", "x", "t", "d": 8
    default: 4
    }
  }
}
