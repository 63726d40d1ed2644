import DocumentModel

/// What the engine knows of content on its way in and out: blobs to fetch again and why,
/// small content fetched and not yet written, versions whose content reached the hub before
/// their records, and the bytes of objects moved. Pure: no I/O, no lock of its own; the
/// content's bytes at rest belong to the content store.
///
/// Facts that must agree, kept together by the mutating methods:
/// - An unreadable blob (its file is here and cannot be read) is also missing: it is fetched
///   again over the file, and both marks go together when the content arrives or is let go.
/// - A blob that fails again waits twice as long before its next try, up to a minute; one whose
///   awaited object or blob the hub no longer wants (a device has put it again) is due at once.
/// - `fetchedBytes` is the size of the small content held in memory, so that whether it fills
///   an apply batch is known without summing it.
struct ContentState {
  /// Blobs to fetch again (missing, or found damaged).
  private(set) var missing: [ContentHash: MissingBlob] = [:]
  /// Blobs among `missing` whose file is here and cannot be read (a failing disk).
  private(set) var unreadable: Set<ContentHash> = []
  /// Small content just fetched (checked against its hash), held until the files that take it
  /// are written, so that it is written once, into them. Never durable: a crash before it
  /// lands leaves records whose content is fetched again.
  private(set) var fetched: [ContentHash: [UInt8]] = [:]
  private(set) var fetchedBytes: UInt64 = 0
  /// Queued versions whose content is on the hub, their records not yet: counted as done, so
  /// that progress moves with each file rather than with each batch of records.
  private(set) var uploaded: Set<VersionID> = []
  /// Ids of objects the hub wants that this device looked for in the content it holds whole
  /// and the hub keeps as twins (``SyncEngine/serveWantedObjects()``): each is looked for once,
  /// since looking cuts content, and the hub asks again at every round.
  var wantedLookedForInTwins: Set<[UInt8]> = []
  /// Bytes of content objects this run put on the hub and fetched from it, as stored
  /// (compressed): what chunks save shows here.
  private(set) var bytesSent: UInt64 = 0
  private(set) var bytesReceived: UInt64 = 0
  /// When the chunk lists of content no longer held were last let go (monotonic ms).
  var lastChunkListTrim: UInt64 = 0
  /// When the loop last looked at the size of the content cache (monotonic ms).
  var lastCacheTrim: UInt64 = 0

  /// The first wait after a failed try, and the longest (milliseconds).
  static let firstBackoff: UInt64 = 1000
  static let longestBackoff: UInt64 = 60_000

  // MARK: - Blobs to fetch again

  /// A blob is missing or was found damaged, to fetch at `retryAt` (monotonic ms); a more
  /// precise reason than "fetching" replaces the one noted. Returns whether it is newly missing
  /// (the loop should wake for it).
  mutating func noteMissing(
    _ hash: ContentHash, _ reason: ContentWait, awaiting awaited: [UInt8]?, retryAt: UInt64
  ) -> Bool {
    guard var entry = missing[hash] else {
      missing[hash] = MissingBlob(
        retryAt: retryAt, backoff: Self.firstBackoff, reason: reason, awaited: awaited)
      return true
    }
    if reason != .fetching {
      entry.note(reason, awaiting: awaited)
      missing[hash] = entry
    }
    return false
  }

  /// A blob's file is here and cannot be read: fetched again over it. Returns whether it is
  /// newly missing.
  mutating func noteUnreadable(_ hash: ContentHash, retryAt: UInt64) -> Bool {
    unreadable.insert(hash)
    return noteMissing(hash, .damagedHere, awaiting: nil, retryAt: retryAt)
  }

  func isUnreadable(_ hash: ContentHash) -> Bool { unreadable.contains(hash) }

  /// Why this device waits for `hash`, if it does.
  func waitReason(_ hash: ContentHash) -> ContentWait? { missing[hash]?.reason }

  /// The missing blobs whose try is due at `now` (monotonic ms), in hash order.
  func due(at now: UInt64) -> [ContentHash] {
    missing.filter { $0.value.retryAt <= now }.map(\.key).sorted()
  }

  /// The content arrived whole, or is not needed any more: nothing waits for it.
  mutating func settled(_ hash: ContentHash) {
    missing[hash] = nil
    unreadable.remove(hash)
  }

  /// A try at `now` did not bring the content: the next waits longer; `reason` and `awaited`
  /// are what the hub said, if it said.
  mutating func failedAgain(
    _ hash: ContentHash, at now: UInt64, reason: ContentWait?, awaited: [UInt8]?
  ) {
    guard var entry = missing[hash] else { return }
    entry.retryAt = now + entry.backoff
    entry.backoff = min(entry.backoff * 2, Self.longestBackoff)
    if let reason { entry.note(reason, awaiting: awaited) }
    missing[hash] = entry
  }

  /// Makes due at once the blobs whose awaited blob or object the hub no longer lists as
  /// wanted (`stillWanted`): a device has put it again.
  mutating func fetchAgainWhatWasPut(stillWanted: Set<[UInt8]>) {
    for (hash, entry) in missing {
      guard let awaited = entry.awaited, !stillWanted.contains(awaited) else { continue }
      missing[hash] = MissingBlob(retryAt: 0, backoff: Self.firstBackoff, reason: .fetching)
    }
  }

  // MARK: - Small content in memory

  /// Holds small content fetched for the files that will take it.
  mutating func hold(_ bytes: [UInt8], for hash: ContentHash) {
    if let old = fetched.updateValue(bytes, forKey: hash) {
      fetchedBytes -= UInt64(old.count)
    }
    fetchedBytes += UInt64(bytes.count)
  }

  func isHeld(_ hash: ContentHash) -> Bool { fetched[hash] != nil }

  /// Lets go of content the files it was for have taken.
  mutating func release(_ hash: ContentHash) {
    if let old = fetched.removeValue(forKey: hash) { fetchedBytes -= UInt64(old.count) }
  }

  /// Everything held, which is held no more.
  mutating func takeFetched() -> [ContentHash: [UInt8]] {
    defer {
      fetched = [:]
      fetchedBytes = 0
    }
    return fetched
  }

  // MARK: - Uploads and bytes moved

  /// A queued version's content is on the hub.
  mutating func noteUploaded(_ id: VersionID) { uploaded.insert(id) }

  /// The records of `ids` are on the hub: their content no longer counts apart.
  mutating func recordsSent(_ ids: some Sequence<VersionID>) { uploaded.subtract(ids) }

  /// The outbox is empty: nothing is on its way.
  mutating func outboxEmptied() { uploaded = [] }

  mutating func sent(_ bytes: UInt64) { bytesSent = saturatingSum(bytesSent, bytes) }
  mutating func received(_ bytes: UInt64) { bytesReceived = saturatingSum(bytesReceived, bytes) }
}
