/// A remote version on its way into the tree: recorded, and made durable, before its content
/// takes the path's name, and removed with the record of what the path then shows. One left at
/// start means the change may or may not have landed.
public struct ApplyIntent: Sendable, Equatable {
  public var path: [UInt8]
  public var versionID: [UInt8]
  public var contentHash: [UInt8]

  public init(path: [UInt8], versionID: [UInt8], contentHash: [UInt8]) {
    self.path = path
    self.versionID = versionID
    self.contentHash = contentHash
  }
}
