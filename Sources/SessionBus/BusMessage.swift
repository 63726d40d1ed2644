/// One D-Bus message in the little-endian wire format: what this client sends, and the header
/// of what it reads back.
public struct BusMessage: Equatable, Sendable {
  public enum Kind: UInt8, Sendable {
    case methodCall = 1
    case methodReturn = 2
    case error = 3
    case signal = 4
  }

  public var kind: Kind
  public var serial: UInt32
  public var path: String?
  public var interface: String?
  public var member: String?
  public var destination: String?
  public var errorName: String?
  public var replySerial: UInt32?
  public var body: [BusValue] = []

  /// A method call to `member` of `interface` at `path` on the service `destination`.
  public static func call(
    serial: UInt32, destination: String, path: String, interface: String, member: String,
    body: [BusValue] = []
  ) -> BusMessage {
    BusMessage(
      kind: .methodCall, serial: serial, path: path, interface: interface, member: member,
      destination: destination, body: body)
  }

  /// The message's bytes, header and body.
  public func encoded() -> [UInt8] {
    var bodyWriter = WireWriter()
    for value in body { bodyWriter.write(value) }
    var fields: [BusValue] = []
    func field(_ code: UInt8, _ value: BusValue) {
      fields.append(.dictEntry(.byte(code), .variant(value)))
    }
    if let path { field(1, .objectPath(path)) }
    if let interface { field(2, .string(interface)) }
    if let member { field(3, .string(member)) }
    if let errorName { field(4, .string(errorName)) }
    if let replySerial { field(5, .uint32(replySerial)) }
    if let destination { field(6, .string(destination)) }
    let signature = body.map(\.signature).joined()
    if !signature.isEmpty {
      fields.append(.dictEntry(.byte(8), .variant(.typeSignature(signature))))
    }

    var header = WireWriter()
    header.bytes += [UInt8(ascii: "l"), kind.rawValue, 0, 1]
    header.write(.uint32(UInt32(bodyWriter.bytes.count)))
    header.write(.uint32(serial))
    // Header fields are an array of STRUCT(BYTE, VARIANT), which marshals like dict entries.
    header.write(.array(elementSignature: "(yv)", fields))
    header.align(to: 8)
    return header.bytes + bodyWriter.bytes
  }

  /// How many bytes the message starting with `prefix` (at least 16 bytes) takes in all.
  public static func length(ofMessageStartingWith prefix: [UInt8]) -> Int? {
    guard prefix.count >= 16, prefix[0] == UInt8(ascii: "l") else { return nil }
    let bodyLength = Int(WireReader.uint32(prefix, at: 4))
    let fieldsLength = Int(WireReader.uint32(prefix, at: 12))
    let headerLength = (16 + fieldsLength + 7) & ~7
    return headerLength + bodyLength
  }

  /// The header of a whole little-endian message (its body is not decoded); nil if malformed.
  public init?(decodingHeaderOf bytes: [UInt8]) {
    guard bytes.count >= 16, bytes[0] == UInt8(ascii: "l"),
      let kind = Kind(rawValue: bytes[1])
    else { return nil }
    self.kind = kind
    serial = WireReader.uint32(bytes, at: 8)
    var reader = WireReader(bytes: bytes, offset: 16)
    let end = 16 + Int(WireReader.uint32(bytes, at: 12))
    guard end <= bytes.count else { return nil }
    while reader.offset < end {
      reader.align(to: 8)
      guard reader.offset < end, let code = reader.byte(), let signature = reader.signature()
      else { return nil }
      switch signature {
      case "s", "o":
        guard let text = reader.string() else { return nil }
        switch code {
        case 1: path = text
        case 2: interface = text
        case 3: member = text
        case 4: errorName = text
        case 6: destination = text
        default: break
        }
      case "u":
        guard let value = reader.uint32() else { return nil }
        if code == 5 { replySerial = value }
      case "g":
        guard reader.signature() != nil else { return nil }
      default:
        return nil
      }
    }
  }

  init(
    kind: Kind, serial: UInt32, path: String? = nil, interface: String? = nil,
    member: String? = nil, destination: String? = nil, body: [BusValue] = []
  ) {
    self.kind = kind
    self.serial = serial
    self.path = path
    self.interface = interface
    self.member = member
    self.destination = destination
    self.body = body
  }
}
