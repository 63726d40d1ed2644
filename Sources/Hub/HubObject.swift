/// One stored content object (a chunk or a manifest node) as a device hands it to a hub.
///
/// The hub never reads inside `data` (a frame that may be compressed, and later sealed); it
/// keeps `references`, the ids of the objects a manifest node names, so that it can tell what
/// records reach without reading content.
public struct HubObject: Sendable, Hashable {
  /// The device's 32-byte id of the object; opaque to the hub.
  public var id: [UInt8]
  /// The stored bytes.
  public var data: [UInt8]
  /// Ids of the objects this one names (a node's children); empty for a chunk.
  public var references: [[UInt8]]

  public init(id: [UInt8], data: [UInt8], references: [[UInt8]] = []) {
    self.id = id
    self.data = data
    self.references = references
  }

  /// The most stored bytes one object may have: a 256 KiB chunk that zstd could not shrink,
  /// with its frame byte, or a node of 1,024 children, with room to spare.
  public static let maximumSize = 512 << 10
  /// The most objects one node may name.
  public static let maximumReferences = 1024

  /// Refuses ids that are not 32 bytes, as every hub's object calls do before anything else.
  public static func check(ids: [[UInt8]]) throws(HubError) {
    if let bad = ids.first(where: { $0.count != 32 }) {
      throw .failed("an object id of \(bad.count) bytes, not 32")
    }
  }

  /// Refuses objects no device makes: a malformed id, more bytes than any object can have, or
  /// more references than any node names.
  public static func check(_ objects: [HubObject]) throws(HubError) {
    for object in objects {
      try check(ids: [object.id] + object.references)
      guard object.data.count <= maximumSize else {
        throw .integrity("an object of \(object.data.count) bytes, larger than any can be")
      }
      guard object.references.count <= maximumReferences else {
        throw .integrity("an object naming \(object.references.count) others")
      }
    }
  }
}
