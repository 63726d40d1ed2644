/// One row of a batched small-blob read: a blob's hash and size, and one of its chunks (none
/// for an empty blob).
struct SmallBlobChunk: Sendable {
  var hash: [UInt8]
  var size: Int64
  var index: Int32?
  var data: [UInt8]?
}
