import Crypto

/// 32 bytes of SHA-256, stored as four big-endian words so that comparing and hashing are cheap.
public struct Digest256: Hashable, Comparable, Sendable, CustomStringConvertible {
  let w0: UInt64
  let w1: UInt64
  let w2: UInt64
  let w3: UInt64

  /// Takes exactly 32 bytes; returns nil for any other length.
  public init?(bytes: some Collection<UInt8>) {
    guard bytes.count == 32 else { return nil }
    // Four words folded in place: no array of words, no enumeration (every record a start
    // loads, and every id read from the database, comes through here).
    var (a, b, c, d): (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    var index = 0
    for byte in bytes {
      switch index >> 3 {
      case 0: a = a << 8 | UInt64(byte)
      case 1: b = b << 8 | UInt64(byte)
      case 2: c = c << 8 | UInt64(byte)
      default: d = d << 8 | UInt64(byte)
      }
      index += 1
    }
    (w0, w1, w2, w3) = (a, b, c, d)
  }

  /// The SHA-256 of `data`.
  public static func sha256(_ data: [UInt8]) -> Digest256 {
    let digest = SHA256.hash(data: data)
    return digest.withUnsafeBytes { Digest256(bytes: $0)! }
  }

  public var bytes: [UInt8] {
    var result: [UInt8] = []
    result.reserveCapacity(32)
    for word in [w0, w1, w2, w3] {
      for shift in stride(from: 56, through: 0, by: -8) {
        result.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
      }
    }
    return result
  }

  /// Lowercase hexadecimal, 64 digits.
  public var hex: String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(64)
    for byte in bytes {
      out.append(digits[Int(byte >> 4)])
      out.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  public var description: String { hex }

  public static func < (lhs: Digest256, rhs: Digest256) -> Bool {
    (lhs.w0, lhs.w1, lhs.w2, lhs.w3) < (rhs.w0, rhs.w1, rhs.w2, rhs.w3)
  }
}

/// The id of a version record: the SHA-256 of its canonical encoding.
public struct VersionID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let digest: Digest256
  public init(_ digest: Digest256) { self.digest = digest }
  public var bytes: [UInt8] { digest.bytes }
  public var hex: String { digest.hex }
  /// The first 6 hex digits, as used in `.versions` names.
  public var shortHex: String { String(hex.prefix(6)) }
  public var description: String { hex }
  public static func < (lhs: VersionID, rhs: VersionID) -> Bool { lhs.digest < rhs.digest }
}

/// The SHA-256 of a blob's bytes; blobs are addressed by it.
public struct ContentHash: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let digest: Digest256
  public init(_ digest: Digest256) { self.digest = digest }
  /// The hash of `blob`.
  public init(of blob: [UInt8]) { self.digest = .sha256(blob) }
  public var bytes: [UInt8] { digest.bytes }
  public var hex: String { digest.hex }
  public var description: String { hex }
  public static func < (lhs: ContentHash, rhs: ContentHash) -> Bool { lhs.digest < rhs.digest }
}

/// A device's stable random id; ties between versions are broken by it.
public struct DeviceID: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let high: UInt64
  public let low: UInt64
  public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }
  public var description: String {
    let h = String(high, radix: 16)
    let l = String(low, radix: 16)
    return String(repeating: "0", count: 16 - h.count) + h
      + String(repeating: "0", count: 16 - l.count)
      + l
  }
  public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool {
    (lhs.high, lhs.low) < (rhs.high, rhs.low)
  }
}
