/// A path inside the library, as raw bytes per component.
///
/// Paths are never keyed by `String`: Swift compares strings by canonical equivalence, which
/// would merge an NFC and an NFD name that the file system keeps apart.
public struct DocumentPath: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// The components, root first; each is a non-empty byte string without `/`.
  public let components: [[UInt8]]

  /// The root of the library (no components); it is never a document.
  public static let root = DocumentPath(components: [])

  public init(components: [[UInt8]]) {
    self.components = components
  }

  /// Splits a slash-separated string into components, dropping empty ones.
  public init(_ string: String) {
    self.components = Array(string.utf8).split(separator: UInt8(ascii: "/")).map { Array($0) }
  }

  public var isRoot: Bool { components.isEmpty }

  /// The last component, or nothing for the root.
  public var name: [UInt8] { components.last ?? [] }

  /// The folder that holds this path; the root's parent is the root.
  public var parent: DocumentPath { DocumentPath(components: Array(components.dropLast())) }

  public func appending(_ component: [UInt8]) -> DocumentPath {
    DocumentPath(components: components + [component])
  }

  public func appending(_ component: String) -> DocumentPath {
    appending(Array(component.utf8))
  }

  /// Whether `self` is `other` or lies below it.
  public func isEqualOrDescendant(of other: DocumentPath) -> Bool {
    components.count >= other.components.count
      && components.prefix(other.components.count).elementsEqual(other.components)
  }

  /// This path moved from under `old` to under `new` (for folder renames).
  public func rebased(from old: DocumentPath, to new: DocumentPath) -> DocumentPath {
    DocumentPath(components: new.components + components.dropFirst(old.components.count))
  }

  /// The slash-joined bytes, as the file system sees them.
  public var bytes: [UInt8] { Array(components.joined(separator: [UInt8(ascii: "/")])) }

  public var description: String { String(decoding: bytes, as: UTF8.self) }

  // Each component's bytes go to the hasher at once: the synthesized hash fed it one byte at a
  // time, and paths are the keys of every per-document table (a start hashes each several
  // times). Equal paths have equal components, so they still hash alike.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(components.count)
    for component in components {
      hasher.combine(component.count)
      component.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
  }

  /// Component by component, each compared as unsigned bytes. Written out rather than as
  /// nested `lexicographicallyPrecedes`, whose closures made the sorts of a window of 10,000
  /// renames (20,000 paths, several sorts) take seconds in a debug build.
  public static func < (lhs: DocumentPath, rhs: DocumentPath) -> Bool {
    let common = min(lhs.components.count, rhs.components.count)
    var index = 0
    while index < common {
      let order = compare(lhs.components[index], rhs.components[index])
      if order != 0 { return order < 0 }
      index += 1
    }
    return lhs.components.count < rhs.components.count
  }

  /// -1, 0 or 1 as `a` sorts before, with or after `b`.
  private static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a.withUnsafeBufferPointer { left in
      b.withUnsafeBufferPointer { right in
        let common = min(left.count, right.count)
        var index = 0
        while index < common {
          let x = left[index]
          let y = right[index]
          if x != y { return x < y ? -1 : 1 }
          index += 1
        }
        return left.count == right.count ? 0 : (left.count < right.count ? -1 : 1)
      }
    }
  }
}
