import DocumentModel
import Glibc

extension SyncEngine {
  // MARK: - History content is a cache

  /// The most the blob folder keeps beyond what the device needs (current and conflict
  /// versions, content waiting to upload or to land): earlier versions read in `.history`,
  /// resolved conflict versions, merge bases, saves that were overtaken before they went up.
  /// Beyond it the least recently used go; `.history` fetches them again from the hub.
  static let contentCacheBytes: Int64 = 512 << 20

  /// How long content that was just stored or read is safe from the trim (seconds).
  static let contentCacheGraceSeconds = 600

  /// How often the loop looks at the blob folder's size (milliseconds).
  static let contentCacheCheckMilliseconds: UInt64 = 60_000

  /// How often the chunk lists of content this device no longer holds are let go
  /// (milliseconds).
  static let chunkListTrimMilliseconds: UInt64 = 3_600_000

  /// Lets go of the chunk lists of content that is neither `needed` nor a blob here: a year of
  /// daily saves of a large file would otherwise keep a list for each (16,000 rows of 36 bytes
  /// a GiB). A list let go too early is only made again by cutting the content.
  func trimChunkLists(keeping needed: Set<String>) {
    guard let hashes = try? store.chunkListHashes() else { return }
    let gone = hashes.filter { hash in
      guard let digest = Digest256(bytes: hash) else { return true }
      let content = ContentHash(digest)
      return !needed.contains(content.hex) && !blobs.contains(content)
    }
    do {
      try store.removeChunkLists(hashes: gone)
    } catch {
      logger.warning("cannot let go of chunk lists: \(error)")
    }
  }

  /// Trims the cache of earlier versions' content to ``contentCacheBytes`` when it is due
  /// (once a minute), or now when `force`. Walks the blob folder outside the lock.
  func trimContentCacheIfDue(force: Bool = false) {
    let now = monotonicMilliseconds()
    let due = withLock { () -> Bool in
      guard
        force
          || now >= saturatingSum(contentState.lastCacheTrim, Self.contentCacheCheckMilliseconds)
      else { return false }
      contentState.lastCacheTrim = now
      return true
    }
    guard due else { return }
    var files: [(hex: String, size: Int64, used: Int)] = []
    var total: Int64 = 0
    // Never what arrived or was read a moment ago: a `.history` read opens what it just
    // fetched, and a save's copy is made before the record that names it.
    let recent = time(nil) - Self.contentCacheGraceSeconds
    for file in blobs.storedBlobs() {
      total += file.size
      if file.used <= recent { files.append(file) }
    }
    let chunkListsDue = withLock { () -> Bool in
      guard
        force
          || now >= saturatingSum(contentState.lastChunkListTrim, Self.chunkListTrimMilliseconds)
      else { return false }
      contentState.lastChunkListTrim = now
      return true
    }
    guard total > Self.contentCacheBytes || chunkListsDue else { return }
    let needed = withLock { () -> Set<String> in
      var needed: Set<String> = []
      for id in library.outbox {
        if let hash = library.known[id]?.content.blobHash { needed.insert(hash.hex) }
      }
      for versions in library.state.conflicts.values {
        for record in versions { if let hash = record.content.blobHash { needed.insert(hash.hex) } }
      }
      for case .document(let record) in library.state.entries.values {
        if let hash = record.content.blobHash { needed.insert(hash.hex) }
      }
      for id in library.known.mergeBases(in: library.state) {
        if let hash = library.known[id]?.content.blobHash { needed.insert(hash.hex) }
      }
      for item in applies.pendingApplies.values { needed.insert(item.hash.hex) }
      for hash in contentState.missing.keys { needed.insert(hash.hex) }
      return needed
    }
    defer {
      if chunkListsDue { trimChunkLists(keeping: needed) }
    }
    guard total > Self.contentCacheBytes else { return }
    var removed = 0
    for file in files.filter({ !needed.contains($0.hex) }).sorted(by: { $0.used < $1.used }) {
      guard total > Self.contentCacheBytes else { break }
      blobs.removeCached(hex: file.hex)
      total -= file.size
      removed += 1
    }
    if removed > 0 {
      blobs.forgetAllChecked()
      logger.info("let go of \(removed) cached earlier version(s) beyond the cache's bound")
    }
  }
}
