/// A library's recovery key: 160 random bits that unlock it when the passphrase is lost,
/// shown once as 8 groups of 5 characters a person can copy by hand.
///
/// Each group is 4 characters of the key in Crockford's base 32 (no I, L, O or U; read
/// without regard to case, O as 0, I and L as 1) and a check character: a sum over GF(32)
/// that catches any one wrong character in a group, any two neighbouring key characters
/// swapped, and a group typed in the wrong place, so a typo is named before anything is tried.
public struct RecoveryKey: Sendable, Hashable, CustomStringConvertible {
  public static let size = 20
  static let groups = 8
  static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

  /// The key's 20 bytes.
  public let bytes: [UInt8]

  init(bytes: [UInt8]) {
    precondition(bytes.count == Self.size)
    self.bytes = bytes
  }

  public static func random() -> RecoveryKey {
    RecoveryKey(bytes: SecretKey.randomBytes(size))
  }

  /// The key that wraps the library's master key.
  var wrappingKey: SecretKey { SecretKey.derive(KeyDerivation.recoveryWrapping, from: bytes) }

  /// As people see it: `XXXXX-XXXXX-XXXXX-XXXXX-XXXXX-XXXXX-XXXXX-XXXXX`.
  public var text: String {
    let symbols = Self.symbols(of: bytes)
    var groups: [String] = []
    for group in 0..<Self.groups {
      let data = Array(symbols[(group * 4)..<(group * 4 + 4)])
      let all = data + [Self.check(group: group, data)]
      groups.append(String(decoding: all.map { Self.alphabet[Int($0)] }, as: UTF8.self))
    }
    return groups.joined(separator: "-")
  }

  public var description: String { "RecoveryKey(hidden)" }

  /// What a person typed: spaces and hyphens anywhere, any case, O for 0, I or L for 1.
  public init(parsing typed: String) throws(KeyError) {
    var symbols: [UInt8] = []
    for character in typed.uppercased().unicodeScalars {
      if character == "-" || character == " " || character == "\t" { continue }
      let value: UInt8
      switch character {
      case "O": value = 0
      case "I", "L": value = 1
      default:
        guard character.isASCII,
          let index = Self.alphabet.firstIndex(of: UInt8(character.value))
        else {
          throw .malformedRecoveryKey("“\(character)” is not one of its characters")
        }
        value = UInt8(index)
      }
      symbols.append(value)
    }
    guard symbols.count == Self.groups * 5 else {
      throw .malformedRecoveryKey(
        "it has \(Self.groups * 5) characters besides hyphens, not \(symbols.count)")
    }
    var data: [UInt8] = []
    for group in 0..<Self.groups {
      let part = Array(symbols[(group * 5)..<(group * 5 + 4)])
      guard Self.check(group: group, part) == symbols[group * 5 + 4] else {
        throw .malformedRecoveryKey("group \(group + 1) has a typo")
      }
      data += part
    }
    self.init(bytes: Self.bytes(of: data))
  }

  /// 160 bits as 32 five-bit symbols, most significant first.
  static func symbols(of bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var buffer: UInt32 = 0
    var bits = 0
    for byte in bytes {
      buffer = buffer << 8 | UInt32(byte)
      bits += 8
      while bits >= 5 {
        bits -= 5
        out.append(UInt8((buffer >> UInt32(bits)) & 31))
      }
    }
    return out
  }

  static func bytes(of symbols: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var buffer: UInt32 = 0
    var bits = 0
    for symbol in symbols {
      buffer = buffer << 5 | UInt32(symbol)
      bits += 5
      if bits >= 8 {
        bits -= 8
        out.append(UInt8((buffer >> UInt32(bits)) & 0xff))
      }
    }
    return out
  }

  /// (group + 1) + Σ αⁱ⁺¹·dᵢ in GF(32) (α a root of x⁵ + x² + 1): the weights are distinct and
  /// non-zero, so one changed symbol always changes the sum, and so does a swap of neighbours
  /// (it adds (αⁱ⁺¹ + αⁱ⁺²)(a + b), non-zero when a ≠ b).
  static func check(group: Int, _ data: [UInt8]) -> UInt8 {
    var sum = UInt8(group + 1)
    var weight: UInt8 = 2
    for symbol in data {
      sum ^= multiply(weight, symbol)
      weight = multiply(weight, 2)
    }
    return sum
  }

  static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
    var a = a
    var b = b
    var product: UInt8 = 0
    while b != 0 {
      if b & 1 != 0 { product ^= a }
      b >>= 1
      a <<= 1
      if a & 32 != 0 { a ^= 0b100101 }
    }
    return product
  }
}
