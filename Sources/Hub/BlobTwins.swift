import DocumentModel

/// A hub that can hold a blob's content as objects: its chunked twin.
///
/// A record made before chunks (or a merge, which names no root) names only its content's
/// SHA-256, and records never change. The hub may cut such a blob into the chunk and node
/// objects a device would have made of the same bytes, keep the root under the blob's hash,
/// and drop the blob's bytes: the versions naming it then share chunks with each other and
/// with everything recorded since. A device that finds no root in a record asks here, and
/// fetches the content as chunks; the whole is still checked against the record's hash.
public protocol BlobTwins: Sendable {
  /// The twins' roots of the blobs among `hashes` that have one.
  func blobRoots(_ hashes: [[UInt8]]) async throws(HubError) -> [[UInt8]: ContentRoot]
}
