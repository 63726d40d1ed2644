import DocumentModel

/// A remote file version waiting to be written into the tree: what the path must still show
/// for it to land, and the content to give it.
struct FileApply: Sendable {
  var path: DocumentPath
  /// What the path showed when the change was decided; the change lands only over that.
  var expected: LocalEntry?
  var target: VersionRecord
  var hash: ContentHash
  var size: UInt64
  var executable: Bool
  var modificationTime: Int64
}
