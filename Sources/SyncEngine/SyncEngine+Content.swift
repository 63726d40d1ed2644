import DocumentModel
import Glibc
import Hub
import LocalStore

extension SyncEngine {
  // MARK: - Where a version's content lives
  //
  // A device holds each current document's content once: in its working file while that file
  // is clean (unchanged since it got the content its path shows), with no blob beside it. A
  // blob is kept only for content that no clean working file holds for sure: conflict versions,
  // content waiting to upload, symlink targets, and history fetched or left behind (a cache:
  // whatever is not here is fetched from the hub again). Every reader goes through
  // ``openContent(_:preferring:)`` or ``contentBytes(_:)``, and checks the hash as it reads.

  /// The inode of a working file that holds `hash` as the version its path shows, unchanged
  /// since (size, modification and change time as recorded): the file at `path`, or with
  /// `anywhere`, any other file after it (a walk of every path shown: for the rare reader that
  /// needs content a copied document shares, never for every document). Called with the lock
  /// held.
  func cleanWorkingFile(
    holding hash: ContentHash, preferring path: DocumentPath? = nil, anywhere: Bool = false
  ) -> UInt64? {
    guard let tree else { return nil }
    func check(_ path: DocumentPath, _ record: ShownRecord) -> UInt64? {
      guard let version = library.known[VersionID(digest(record.versionID))],
        case .file(hash, _, _) = version.content,
        case .file(let inode, let size, let mtime, let ctime, _)? = tree.entry(at: path),
        size == record.size, mtime == record.modificationTime, ctime == record.changeTime
      else { return nil }
      return inode
    }
    if let path, let record = library.shown[path], let inode = check(path, record) { return inode }
    guard anywhere else { return nil }
    for (other, record) in library.shown where other != path {
      if let inode = check(other, record) { return inode }
    }
    return nil
  }

  /// Whether this device holds the content `hash`, as a blob or a clean working file. Called
  /// with the lock held.
  func holdsContent(
    _ hash: ContentHash, preferring path: DocumentPath? = nil, anywhere: Bool = false
  ) -> Bool {
    blobs.contains(hash)
      || cleanWorkingFile(holding: hash, preferring: path, anywhere: anywhere) != nil
  }

  /// The content `hash` open for reading, from its blob or else from a clean working file; nil
  /// when this device holds it nowhere. The caller checks the bytes against the hash as it
  /// reads them: a working file can change under a reader. `locked` says whether the caller
  /// holds the lock.
  func openContent(
    _ hash: ContentHash, preferring path: DocumentPath? = nil, anywhere: Bool = false,
    locked: Bool = false
  ) -> ContentFile? {
    if let file = blobs.openBlob(hash) { return file }
    let find = { self.cleanWorkingFile(holding: hash, preferring: path, anywhere: anywhere) }
    guard let inode = locked ? find() : withLock(find) else { return nil }
    return blobs.openWorkingFile(inode)
  }

  /// The bytes of small content (a symlink target, a pattern file, text to merge), checked
  /// against the hash; nil when this device does not hold it intact. `locked` as for
  /// ``openContent(_:preferring:anywhere:locked:)``.
  func contentBytes(_ hash: ContentHash, preferring path: DocumentPath? = nil, locked: Bool = false)
    -> [UInt8]?
  {
    if let bytes = blobs.bytes(hash) { return bytes }
    guard let result = openContent(hash, preferring: path, locked: locked)?.readAll() else {
      return nil
    }
    return ContentHash(of: result) == hash ? result : nil
  }

  /// The blobs that must stay even when a clean working file holds the same bytes: those a
  /// version waiting to upload names (the working file may change before the upload), and
  /// those of conflict versions (they must read offline, and outlive the current file). Made
  /// once per batch: O(outbox + conflict versions). Called with the lock held.
  func blobsThatMustStay(leaving sent: Set<VersionID> = []) -> Set<ContentHash> {
    var kept: Set<ContentHash> = []
    for id in library.outbox where !sent.contains(id) {
      if let hash = library.known[id]?.content.blobHash { kept.insert(hash) }
    }
    for versions in library.state.conflicts.values {
      for record in versions { if let hash = record.content.blobHash { kept.insert(hash) } }
    }
    return kept
  }

  /// After the hub has the versions `sent`: drops each file's blob that the clean working file
  /// of its path holds, so the document's content is kept once. Called with the lock held;
  /// returns the blobs to remove, which the caller removes outside it. Should the file change
  /// in between, the content stays on the hub, like any earlier version's.
  func blobsHeldByWorkingFiles(_ sent: [VersionRecord]) -> [ContentHash] {
    var release: [ContentHash] = []
    let kept = blobsThatMustStay()
    for record in sent {
      guard record.kind == .file, !Self.keepsBlob(record.path),
        case .file(let hash, _, _) = record.content,
        !release.contains(hash), blobs.contains(hash), !kept.contains(hash),
        cleanWorkingFile(holding: hash, preferring: record.path) != nil
      else { continue }
      release.append(hash)
    }
    return release
  }

  /// The blobs of `batch` that ``blobsHeldByWorkingFiles(_:)`` would drop as soon as the batch
  /// reaches the hub, were it there now: their upload hands the blob's file to the hub instead
  /// of copying it (``uploadBlob(_:handOver:)``). The hub then holds the version's content, as
  /// it would after the drop; should the working file change before the records go up, the
  /// content is the hub's, like any earlier version's. Called with the lock held.
  func blobsToHandOver(_ batch: [VersionRecord]) -> Set<ContentHash> {
    let kept = blobsThatMustStay(leaving: Set(batch.map(\.id)))
    var handOver: Set<ContentHash> = []
    var staying: Set<ContentHash> = []
    for record in batch {
      guard let hash = record.content.blobHash else { continue }
      guard record.kind == .file, !Self.keepsBlob(record.path), !kept.contains(hash) else {
        staying.insert(hash)
        continue
      }
      if cleanWorkingFile(holding: hash, preferring: record.path) != nil { handOver.insert(hash) }
    }
    return handOver.subtracting(staying)
  }

  /// Whether the content of this path always keeps its blob: the pattern and attribute files
  /// are read while the engine decides, before and after they land, and are small.
  static func keepsBlob(_ path: DocumentPath) -> Bool {
    path == IgnoreRules.filePath || path == MergeAttributes.filePath
  }

  /// Fetches the content of the merge bases of documents in conflict that this device no longer
  /// holds (an earlier version, kept only in its working file until an edit replaced it), so
  /// that `.versions/<path>/base` and `merged` read offline and list the same on every device
  /// once a sync returns. Looks again only when the conflicts changed.
  func fetchMergeBases() async throws(SyncError) {
    let (conflicts, wanted) = withLock { () -> ([DocumentPath: [VersionRecord]], [ContentHash]) in
      guard library.state.conflicts != merges.conflictsWithBases else {
        return (library.state.conflicts, [])
      }
      let wanted = library.known.mergeBases(in: library.state).compactMap {
        library.known[$0]?.content.blobHash
      }
      .filter { !holdsContent($0) }
      return (library.state.conflicts, Array(Set(wanted)).sorted())
    }
    for hash in wanted {
      if let wait = try await fetchBlob(hash) {
        withLock { noteMissing(hash, wait.reason, awaiting: wait.awaited, delay: 1000) }
      }
    }
    withLock { merges.conflictsWithBases = conflicts }
  }
}
