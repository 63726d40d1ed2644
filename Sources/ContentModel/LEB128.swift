/// Unsigned LEB128, the variable-length integers of manifests and content references.
enum LEB128 {
  static func append(_ value: UInt64, to out: inout [UInt8]) {
    var rest = value
    while rest >= 0x80 {
      out.append(UInt8(truncatingIfNeeded: rest) | 0x80)
      rest >>= 7
    }
    out.append(UInt8(rest))
  }
}
