/// What a content object holds: a piece of a file's bytes, or a node of a manifest tree.
///
/// The kind is part of the id (BLAKE3's key, BLAKE2b's personalisation), so a chunk whose bytes happen to spell
/// a node's encoding never shares its id, and a hub can be told what references what.
public enum ObjectKind: UInt8, Sendable, Hashable {
  case chunk = 1
  case node = 2

  /// The kind's name in BLAKE3's key derivation.
  var label: String {
    switch self {
    case .chunk: "chunk"
    case .node: "node"
    }
  }

  /// BLAKE2b's 16-byte personalisation for this kind.
  var personal: [UInt8] {
    let text: String =
      switch self {
      case .chunk: "docsync.chunk.1"
      case .node: "docsync.node.1"
      }
    return Array(text.utf8) + [UInt8](repeating: 0, count: 16 - text.utf8.count)
  }
}
