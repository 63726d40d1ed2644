import ContentModel
import DocumentModel

/// Cuts the simulation's content into objects with the real chunker and manifest builder, and
/// reads it back from a ``SimObjectStore`` as a receiving device does: each object checked
/// against its id, the whole against the record's SHA-256.
///
/// The sizes are the standard ones scaled down by 256, so that files of some KiB have tens of
/// chunks and trees of one or two levels, while a chunk still spans more than the chunker's
/// 64-byte window (cuts after an edit fall back where they were within a chunk or two).
final class SimChunking {
  /// One content as objects: its root, and each distinct chunk and node, chunks first, then
  /// nodes bottom up (children before parents, as the engine puts them).
  struct Cut {
    var root: ContentRoot
    var objects: [(id: ObjectID, plain: [UInt8], references: [ObjectID])]
    var chunkCount: Int
  }

  enum FetchError: Error, CustomStringConvertible {
    case missing(ObjectID)
    case object(ManifestError)
    case content(ContentHash)

    var description: String {
      switch self {
      case .missing(let id): "the hub lacks object \(id.hex.prefix(12))"
      case .object(let error): "\(error)"
      case .content(let hash): "the chunks do not make content \(hash)"
      }
    }
  }

  static let parameters = ChunkingParameters(minimum: 64, average: 256, maximum: 1_024)

  let hasher = ObjectHasher()
  let compressor = ObjectCompressor()
  let verifier: ObjectVerifier
  let builder: ManifestBuilder
  private var cuts: [ContentHash: Cut] = [:]
  private var frames: [ObjectID: [UInt8]] = [:]

  init() {
    verifier = ObjectVerifier(hasher: hasher, compressor: compressor, parameters: Self.parameters)
    builder = ManifestBuilder(hasher: hasher)
  }

  /// The objects of `bytes`. Cutting is a pure function of the bytes, so each is cut once.
  func cut(_ bytes: [UInt8]) -> Cut {
    let hash = ContentHash(of: bytes)
    if let cut = cuts[hash] { return cut }
    var splitter = ContentSplitter(
      chunker: ContentChunker(parameters: Self.parameters), hasher: hasher)
    var objects: [(id: ObjectID, plain: [UInt8], references: [ObjectID])] = []
    var seen: Set<ObjectID> = []
    bytes.withUnsafeBytes { buffer in
      splitter.append(buffer) { chunk, entry in
        if seen.insert(entry.id).inserted { objects.append((entry.id, Array(chunk), [])) }
      }
    }
    let entries = splitter.finish { chunk, entry in
      if seen.insert(entry.id).inserted { objects.append((entry.id, Array(chunk), [])) }
    }
    let tree = builder.build(chunks: entries)
    for node in tree.nodes where seen.insert(node.id).inserted {
      objects.append((node.id, node.encoded, node.node.entries.map(\.id)))
    }
    let cut = Cut(root: tree.root, objects: objects, chunkCount: entries.count)
    cuts[hash] = cut
    return cut
  }

  /// The stored frame of an object's plain bytes (compressed where it pays, as a device puts it).
  func frame(_ id: ObjectID, _ plain: [UInt8]) -> [UInt8] {
    if let frame = frames[id] { return frame }
    let frame = compressor.frame(plain)
    frames[id] = frame
    return frame
  }

  /// The content `root` names, walked from the store's objects and checked; `damaged` flips a
  /// bit of the first object read, as a damaged disk or network would.
  func fetch(
    _ root: ContentRoot, hash: ContentHash, from store: SimObjectStore, damaged: Bool = false
  ) throws(FetchError) -> [UInt8] {
    var damage = damaged
    func framed(_ id: ObjectID) throws(FetchError) -> [UInt8] {
      guard var frame = store.objects[id]?.frame else { throw .missing(id) }
      if damage, !frame.isEmpty {
        frame[frame.count / 2] ^= 0x10
        damage = false
      }
      return frame
    }
    let chunks = try ContentWalk(root: root).chunks(overlapping: 0..<root.size) {
      (entry, height) throws(FetchError) -> ManifestNode in
      let frame = try framed(entry.id)
      do throws(ManifestError) {
        return try verifier.node(frame, for: entry, height: height)
      } catch {
        throw .object(error)
      }
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(Int(root.size))
    for (entry, _) in chunks {
      let frame = try framed(entry.id)
      do throws(ManifestError) {
        bytes += try verifier.chunk(frame, for: entry)
      } catch {
        throw .object(error)
      }
    }
    guard ContentHash(of: bytes) == hash else { throw .content(hash) }
    return bytes
  }
}
