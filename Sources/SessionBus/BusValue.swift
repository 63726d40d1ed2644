/// A D-Bus value as this client sends it: the few types a method call here needs.
public indirect enum BusValue: Equatable, Sendable {
  case byte(UInt8)
  case uint32(UInt32)
  case int32(Int32)
  case string(String)
  case objectPath(String)
  /// A type signature (`g`), as the header's SIGNATURE field holds it.
  case typeSignature(String)
  /// An array of values of one type, given by its signature (needed when it is empty).
  case array(elementSignature: String, [BusValue])
  /// A dictionary entry `{kv}`, only inside an array.
  case dictEntry(BusValue, BusValue)
  case variant(BusValue)

  /// The type signature of this value.
  public var signature: String {
    switch self {
    case .byte: "y"
    case .uint32: "u"
    case .int32: "i"
    case .string: "s"
    case .objectPath: "o"
    case .typeSignature: "g"
    case .array(let element, _): "a" + element
    case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
    case .variant: "v"
    }
  }
}
