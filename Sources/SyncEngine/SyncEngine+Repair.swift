import DocumentModel
import Glibc
import Hub
import LocalStore

extension SyncEngine {
  /// The version's content open for reading, checked against its hash (once per change of
  /// its file), so that a conflict version never reads as wrong bytes: nil when it is missing
  /// or damaged, and then it is fetched again. Called without the lock.
  public func contentFile(of record: VersionRecord) -> ContentFile? {
    guard let hash = record.content.blobHash else { return nil }
    guard let blob = blobs.openBlob(hash) else {
      // The current version of a path (a merge reads it) has no blob: its clean file holds it.
      guard
        let inode = withLock({ () -> UInt64? in
          guard let found = cleanWorkingFile(holding: hash, preferring: record.path) else {
            noteMissing(hash)
            return nil
          }
          return found
        }),
        let file = blobs.openWorkingFile(inode)
      else { return nil }
      if blobs.isChecked(file, hash) { return file }
      guard file.holds(hash) else { return nil }
      blobs.noteChecked(file, hash)
      return file
    }
    if blobs.isChecked(blob, hash) { return blob }
    guard blob.holds(hash) else {
      logger.error("local blob \(hash.hex) does not match its hash; fetching it again")
      blobs.remove(hash)
      withLock { noteMissing(hash, .damagedHere) }
      return nil
    }
    blobs.noteChecked(blob, hash)
    return blob
  }

  /// The paths and conflict versions whose content is on its way, and why, in path order.
  /// Walks the documents only while some blob is missing. Called with the lock held.
  func waitingForContent() -> [ContentWaiting] {
    guard !contentState.missing.isEmpty else { return [] }
    var waiting: [ContentWaiting] = []
    for (path, entry) in library.state.entries {
      guard case .document(let record) = entry, let hash = record.content.blobHash,
        let reason = contentState.waitReason(hash)
      else { continue }
      waiting.append(ContentWaiting(path: path, version: nil, reason: reason))
    }
    for (path, versions) in library.state.conflicts {
      for record in versions {
        guard let hash = record.content.blobHash, let reason = contentState.waitReason(hash)
        else { continue }
        waiting.append(
          ContentWaiting(path: path, version: VersionsName.string(for: record), reason: reason))
      }
    }
    return waiting.sorted { ($0.path, $0.version ?? "") < ($1.path, $1.version ?? "") }
  }

  /// Asks the loop to fetch a blob that is missing or was found damaged, after `delay`
  /// milliseconds; a more precise reason replaces "fetching". Called with the lock held.
  func noteMissing(
    _ hash: ContentHash, _ reason: ContentWait = .fetching, awaiting awaited: [UInt8]? = nil,
    delay: UInt64 = 0
  ) {
    let retryAt = monotonicMilliseconds() + delay
    if contentState.noteMissing(hash, reason, awaiting: awaited, retryAt: retryAt) {
      changeLog.wake.signal()
    }
  }

  /// Fetches the missing blobs that are due, each checked on arrival; one that the hub cannot
  /// give right (missing there, or damaged) is tried again later, less and less often, or as
  /// soon as the hub no longer wants it (a device has put it again).
  func fetchMissingBlobs() async throws(SyncError) {
    let now = monotonicMilliseconds()
    var due = withLock { contentState.due(at: now) }
    // Many at once (the rest of an initial sync after a restart): small content comes into
    // memory together, as a pull brings it, for the next applyPending; the others that are
    // due wait for the next round, so memory holds a bounded number of them.
    if due.count > 1 {
      due = Array(due.prefix(Self.missingPerRound))
      let arrived = try await fetchSmallContent(due)
      withLock {
        // Arrived in memory for the change that needs it; a file that cannot be read stays,
        // and is marked again if it is needed again.
        for hash in arrived { contentState.settled(hash) }
      }
      due.removeAll { arrived.contains($0) }
    }
    for hash in due {
      let unreadable = withLock { contentState.isUnreadable(hash) }
      let wait = blobs.contains(hash) && !unreadable ? nil : try await fetchBlob(hash)
      withLock {
        if blobs.contains(hash) && (!unreadable || wait == nil) {
          contentState.settled(hash)
          logger.info("fetched blob \(hash.hex) again")
        } else {
          contentState.failedAgain(
            hash, at: monotonicMilliseconds(), reason: wait?.reason, awaited: wait?.awaited)
        }
      }
    }
  }

  /// The most missing blobs one round fetches: at most 64 MiB of small content in memory.
  static let missingPerRound = 1024

  /// Tells the hub that a blob arrived failing its check, or missing, and returns why this
  /// device still waits for it. The hub checks its own copy: a damaged one it drops and lists
  /// as wanted, for a device that has the content to put again (``serveWantedBlobs()``).
  func reportToHub(_ hash: ContentHash, arrivedDamaged: Bool) async -> (
    reason: ContentWait, awaited: [UInt8]?
  ) {
    let condition: BlobCondition
    do {
      condition = try await hub.reportDamagedBlob(hash: hash.bytes)
    } catch {
      logger.warning("cannot report blob \(hash.hex) to the hub: \(error)")
      return (arrivedDamaged ? .fetching : .missingOnHub, nil)
    }
    switch condition {
    case .intact:
      logger.warning("the hub's copy of blob \(hash.hex) is intact; fetching it again")
      return (.fetching, nil)
    case .wanted:
      if arrivedDamaged {
        logger.error(
          """
          the hub's copy of blob \(hash.hex) is damaged: the hub dropped it and waits for a \
          device that has the content to put it again
          """)
        return (.damagedOnHub, hash.bytes)
      }
      return (.missingOnHub, hash.bytes)
    case .unknown:
      return (.missingOnHub, nil)
    }
  }

  /// Puts again the blobs the hub wants (dropped there as damaged, or lost) that this device
  /// holds; each one's bytes are checked against its hash on the way up, so damaged local
  /// content never replaces damaged hub content. One small query per sync round.
  /// Returns the hashes the hub wants.
  func serveWantedBlobs() async throws(SyncError) -> Set<[UInt8]> {
    let wanted: Set<ContentHash>
    do {
      wanted = Set(
        try await hub.wantedBlobs().compactMap { Digest256(bytes: $0).map(ContentHash.init) })
    } catch {
      throw SyncError(error)
    }
    for hash in wanted.sorted() where withLock({ holdsContent(hash, anywhere: true) }) {
      if try await uploadBlob(hash) {
        logger.info("put blob \(hash.hex) on the hub again: its copy there was damaged or lost")
      }
    }
    return Set(wanted.map(\.bytes))
  }

  /// Fetches at once the content whose missing blob, chunk or node the hub no longer lists as
  /// wanted (`stillWanted`: both lists, blobs' hashes and objects' ids): a device has put it
  /// again. Called with the lock held.
  func fetchAgainWhatWasPut(stillWanted: Set<[UInt8]>) {
    contentState.fetchAgainWhatWasPut(stillWanted: stillWanted)
  }
}
