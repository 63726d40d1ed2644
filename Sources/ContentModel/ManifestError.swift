/// Why bytes that claim to be a manifest node, a content reference or a stored object are
/// refused: they come from another device or a hub, and are checked before anything uses them.
public enum ManifestError: Error, Sendable, Hashable, CustomStringConvertible {
  case truncated
  case unknownFormat(UInt8)
  case malformed(String)
  case tooLarge(Int)
  /// An object whose bytes do not hash to the id it was asked for (damaged, swapped or forged),
  /// or that is not what its parent says (another height, another size).
  case doesNotMatch(ObjectID, String)

  public var description: String {
    switch self {
    case .truncated: "a content manifest ends early"
    case .unknownFormat(let format):
      "a content object has format \(format), which this docsync does not know (upgrade it)"
    case .malformed(let reason): "a content manifest is malformed: \(reason)"
    case .tooLarge(let size): "a content object would expand to \(size) bytes or more"
    case .doesNotMatch(let id, let reason): "content object \(id.hex) refused: \(reason)"
    }
  }
}
