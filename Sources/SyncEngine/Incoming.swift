import DocumentModel

/// A new working file on its way into the tree: its name under the working files, and the blob
/// it was, when it was renamed from one rather than copied.
struct Incoming {
  var name: String
  var fromBlob: ContentHash?
}
