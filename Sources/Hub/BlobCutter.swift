import ContentModel
import Crypto
import DocumentModel

/// Cuts a blob's bytes into chunk and node objects exactly as a device cuts content it records
/// (ContentModel's splitter and manifest builder, with their defaults, so the same ids), and
/// puts those an object store lacks through its ordinary calls: children before parents, in
/// batches, so that the store's checks, packs and repair apply to a blob's twin as to any
/// upload.
///
/// The SHA-256 of the bytes comes back with the root: a caller installs the twin only when it
/// is the blob's hash, so a blob that reads damaged never gets a twin.
public struct BlobCutter {
  /// The most bytes of chunks held before they are put (a device's upload batches as much).
  public static let batchBytes = 8 << 20
  /// The most objects one put carries.
  public static let batchCount = 1024

  let store: any ObjectStore
  private var splitter = ContentSplitter()
  private var sha = SHA256()
  private var pending: [(id: [UInt8], bytes: [UInt8])] = []
  private var pendingBytes = 0
  private var size: Int64 = 0
  private let compressor = ObjectCompressor()
  /// Objects this cut found already there or put: a run of zeros puts its chunk once.
  private var settled: Set<[UInt8]> = []

  public init(store: any ObjectStore) {
    self.store = store
  }

  /// Takes the next bytes of the blob; puts a batch of chunks once enough are pending.
  public mutating func append(_ bytes: [UInt8]) async throws(HubError) {
    guard !bytes.isEmpty else { return }
    sha.update(data: bytes)
    size += Int64(bytes.count)
    var cut: [(id: [UInt8], bytes: [UInt8])] = []
    bytes.withUnsafeBytes { buffer in
      splitter.append(buffer) { chunk, entry in cut.append((entry.id.bytes, Array(chunk))) }
    }
    for chunk in cut { hold(chunk) }
    if pendingBytes >= Self.batchBytes || pending.count >= Self.batchCount { try await flush() }
  }

  /// Ends the blob: puts the last chunks, then the nodes over them, and returns the root, the
  /// SHA-256 and the size of what was read.
  public mutating func finish() async throws(HubError) -> (
    root: ContentRoot, digest: [UInt8], size: Int64
  ) {
    var cut: [(id: [UInt8], bytes: [UInt8])] = []
    let entries = splitter.finish { chunk, entry in cut.append((entry.id.bytes, Array(chunk))) }
    for chunk in cut { hold(chunk) }
    try await flush()
    let tree = ManifestBuilder(hasher: splitter.hasher).build(chunks: entries)
    // Bottom level first, as the builder makes them: every child is in before its parent.
    var nodes: [HubObject] = []
    for node in tree.nodes where !settled.contains(node.id.bytes) {
      settled.insert(node.id.bytes)
      nodes.append(
        HubObject(
          id: node.id.bytes, data: compressor.frame(node.encoded),
          references: node.node.entries.map(\.id.bytes)))
    }
    for start in stride(from: 0, to: nodes.count, by: Self.batchCount) {
      let part = Array(nodes[start..<min(start + Self.batchCount, nodes.count)])
      let missing = Set(try await store.missingObjects(part.map(\.id)))
      let put = part.filter { missing.contains($0.id) }
      if !put.isEmpty { try await store.putObjects(put) }
    }
    return (tree.root, Array(sha.finalize()), size)
  }

  private mutating func hold(_ chunk: (id: [UInt8], bytes: [UInt8])) {
    guard settled.insert(chunk.id).inserted else { return }
    pending.append(chunk)
    pendingBytes += chunk.bytes.count
  }

  /// Asks which pending chunks the store lacks (those it has count as recent, so that a prune
  /// meanwhile keeps them for the twin), frames and puts only those.
  private mutating func flush() async throws(HubError) {
    guard !pending.isEmpty else { return }
    let missing = Set(try await store.missingObjects(pending.map(\.id)))
    let put = pending.filter { missing.contains($0.id) }.map { chunk in
      HubObject(id: chunk.id, data: compressor.frame(chunk.bytes))
    }
    pending.removeAll(keepingCapacity: true)
    pendingBytes = 0
    if !put.isEmpty { try await store.putObjects(put) }
  }
}
