/// Content objects that a hub stores once per library: the chunks and manifest nodes of
/// versions' content (see ContentModel and docs/content-layer.md).
///
/// A record names the root object of its content in ``HubRecord/blobs``, as it names a blob,
/// and the hub refuses a record whose root it does not have. An object is kept while a record
/// reaches it (through the references of the nodes on the way) or while it is recent: put, or
/// found present by ``missingObjects(_:)``, within the hub's grace period (a day), so that an
/// upload whose record is not committed yet survives a prune that runs meanwhile.
public protocol ObjectStore: Sendable {
  /// The ids among `ids` that the hub does not have, in the order asked. Those it has count as
  /// recent from now: a device that skips putting them may name them for a grace period.
  func missingObjects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]]

  /// Stores the objects, each unless the hub has it (then it counts as recent), all or none.
  /// An object must come after every object it references (in this batch or an earlier one):
  /// else ``HubError/missingBlob(_:)`` names the first absent one, so that a hub that has a
  /// node has everything under it. Ids are 32 bytes, objects at most
  /// ``HubObject/maximumSize`` bytes with at most ``HubObject/maximumReferences`` references.
  func putObjects(_ objects: [HubObject]) async throws(HubError)

  /// The stored bytes of the objects among `ids` that the hub has. One whose stored bytes fail
  /// the hub's own check is left out, dropped and listed in ``wantedObjects()``.
  func objects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]: [UInt8]]

  /// Ids of objects the hub found damaged (or lost) and asks its devices to put again; a put
  /// of the object ends the want.
  func wantedObjects() async throws(HubError) -> [[UInt8]]

  /// Stores `chunks` by taking the file that holds them in place, as ``putObjects(_:)`` would
  /// store each as `framePrefix` followed by its bytes (a raw frame), unless the hub has it.
  /// True when the hub has every one of them now; false when it cannot take the file (another
  /// file system, a hub over the network): nothing changed, and the caller puts them.
  ///
  /// The caller keeps its file and its name; it must never change the file's bytes again (a
  /// blob: immutable once written). `descriptor` is the file open for reading, `path` its name.
  func adoptChunks(
    file path: String, descriptor: Int32, chunks: [AdoptedChunk], framePrefix: [UInt8]
  )
    async throws(HubError) -> Bool
}

extension ObjectStore {
  /// Takes nothing: the caller puts the chunks.
  public func adoptChunks(
    file path: String, descriptor: Int32, chunks: [AdoptedChunk], framePrefix: [UInt8]
  ) async throws(HubError) -> Bool {
    false
  }
}
