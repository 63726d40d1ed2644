import DocumentModel
import Hub
import LocalStore

/// What this device knows of the library: the version records, the state they make, the
/// earlier versions they leave for `.history`, what each path shows, the versions still to go
/// to the hub, and where this device is in the hub's lists. Pure: no I/O, no lock of its own.
///
/// Facts that must agree, kept together by the mutating methods:
/// - `state` and `history` are what `known` makes: records come and go only through
///   ``queue(_:)``, ``learn(_:)`` and ``forget(_:)``, which bring both up to date at the
///   paths they touch, so the three never disagree.
/// - The outbox names only known versions, each once, in the order they were made; a version
///   held back (its content cannot be provided) or announced as such is in the outbox.
struct LibraryKnowledge {
  private(set) var known: VersionSet
  private(set) var state: LibraryState
  /// The earlier versions of every document, for `.history`.
  private(set) var history = HistoryIndex()
  /// What each path shows: the version and the working file's size and times then.
  var shown: [DocumentPath: ShownRecord] = [:]
  /// Versions made here and not yet on the hub, in the order they were made.
  private(set) var outbox: [VersionID] = []
  /// Versions of the outbox whose content this device cannot provide (its blob was damaged
  /// and the file has changed since): tried again when a sync is asked for and at the next
  /// start, and reported by `synchronize`.
  private(set) var stalled: Set<VersionID> = []
  /// Of the versions ever held back, those whose event was posted: a version that fails at
  /// every `docsync sync` is told once, not at every try.
  private(set) var heldBackAnnounced: Set<VersionID> = []
  /// This device's id, name and clock: every record made here is later than every record seen.
  var author: VersionAuthor
  /// Where this device is in the hub's records; stored with the records it covers.
  var cursor: HubCursor
  /// Where this device is in the hub's list of erasures; stored after what it names is done.
  var erasureCursor: HubCursor

  init(known: VersionSet, author: VersionAuthor, cursor: HubCursor, erasureCursor: HubCursor) {
    self.known = known
    state = LibraryState(known)
    self.author = author
    self.cursor = cursor
    self.erasureCursor = erasureCursor
  }

  /// The paths with earlier versions, as stored (read at start rather than derived again).
  mutating func loadHistory(pathsWithEarlierVersions paths: [DocumentPath]) {
    history = HistoryIndex(pathsWithEarlierVersions: paths)
  }

  /// The outbox as stored at the last run; versions that are not known are left out.
  mutating func loadOutbox(_ ids: [VersionID]) {
    var seen: Set<VersionID> = []
    outbox = ids.filter { seen.insert($0).inserted && known.contains($0) }
  }

  // MARK: - Records

  /// Records made here: known, and queued for the hub, together. Each is new (its time is
  /// later than every record this device has seen), so it is queued once.
  mutating func queue(_ records: [VersionRecord]) -> LibraryChange {
    let change = insert(records)
    outbox += records.map(\.id)
    return change
  }

  /// Records from elsewhere (the hub, or a merge every device makes alike): known, and seen by
  /// this device's clock, so that what it records next is later.
  mutating func learn(_ records: [VersionRecord]) -> LibraryChange {
    for record in records { author.observe(record) }
    return insert(records)
  }

  /// Queues known versions for the hub (a merge this device made); others, and versions
  /// queued already, are left out.
  mutating func enqueue(_ ids: [VersionID]) {
    for id in ids where known.contains(id) && !outbox.contains(id) { outbox.append(id) }
  }

  /// Drops records for good (`docsync forget`): from what is known, the outbox and what is
  /// held back, and from the state and history they made.
  mutating func forget(_ gone: [VersionRecord]) -> LibraryChange {
    let ids = Set(gone.map(\.id))
    outbox.removeAll { ids.contains($0) }
    stalled.subtract(ids)
    heldBackAnnounced.subtract(ids)
    return refresh(known.remove(gone))
  }

  /// Notes that retention released the content of `ids`.
  mutating func release(_ ids: Set<VersionID>) {
    history.release(ids, in: known)
  }

  private mutating func insert(_ records: [VersionRecord]) -> LibraryChange {
    refresh(known.insert(contentsOf: records))
  }

  /// Brings `state` and `history` up to date with `known` at `touched`, noting the conflicts
  /// those paths had before. Only paths in conflict are remembered: a burst of creates stays
  /// cheap.
  private mutating func refresh(_ touched: Set<DocumentPath>) -> LibraryChange {
    var change = LibraryChange(touched: touched)
    for path in touched {
      guard let versions = state.conflicts[path] else { continue }
      change.conflictsBefore[path] = versions
      change.currentBefore[path] = state.current(at: path)
    }
    change.recomputed = state.update(from: known, touched: touched)
    history.update(from: known, touched: touched)
    return change
  }

  // MARK: - The outbox

  /// Up to `limit` versions of the outbox to upload: the oldest not held back.
  func nextUploads(limit: Int) -> [VersionRecord] {
    Array(outbox.lazy.filter { !stalled.contains($0) }.prefix(limit).compactMap { known[$0] })
  }

  /// Whether every version of the outbox is held back (or there is none): nothing is on its way.
  var nothingToUpload: Bool { outbox.allSatisfy(stalled.contains) }

  /// The versions of the outbox that are not held back.
  var uploadsWaiting: [VersionRecord] {
    outbox.filter { !stalled.contains($0) }.compactMap { known[$0] }
  }

  /// The hub has these versions: they leave the outbox.
  mutating func uploaded(_ sent: Set<VersionID>) {
    outbox.removeAll { sent.contains($0) }
    stalled.subtract(sent)
    heldBackAnnounced.subtract(sent)
  }

  /// Holds a queued version back: its content cannot be provided. Returns whether it is the
  /// first time (its event is then posted).
  mutating func holdBack(_ id: VersionID) -> Bool {
    guard outbox.contains(id) else { return false }
    stalled.insert(id)
    return heldBackAnnounced.insert(id).inserted
  }

  /// Tries every held-back version again (a person who asks for a sync may have mended the disk).
  mutating func retryHeldBack() {
    stalled.removeAll()
  }
}
