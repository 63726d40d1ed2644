import Hub
import Synchronization

/// A hub that can refuse to give content (all of it, or some), or be unreachable altogether,
/// as a hub behind a network that went down: to show what a device reads without it.
final class SwitchableHub: Hub {
  let inner: any Hub
  private struct Switches {
    var unreachable = false
    var refusedContent: Set<[UInt8]>? = []
  }
  private let switches = Mutex(Switches())

  init(_ inner: any Hub) { self.inner = inner }

  /// Every call fails as an unreachable hub's does (false: the hub answers again).
  func setUnreachable(_ unreachable: Bool) { switches.withLock { $0.unreachable = unreachable } }

  /// Fetches of these blobs fail as an unreachable hub's do; nil: every fetch.
  func refuseContent(_ hashes: Set<[UInt8]>?) { switches.withLock { $0.refusedContent = hashes } }

  fileprivate func reach() throws(HubError) {
    if switches.withLock({ $0.unreachable }) { throw .unreachable("switched off by the test") }
  }

  fileprivate func reachContent(_ hash: [UInt8]) throws(HubError) {
    try reach()
    let refused = switches.withLock { $0.refusedContent }
    if refused?.contains(hash) ?? true { throw .unreachable("content refused by the test") }
  }

  func putBlob(hash: [UInt8], from fileDescriptor: Int32) async throws(HubError) {
    try reach()
    try await inner.putBlob(hash: hash, from: fileDescriptor)
  }
  func hasBlob(hash: [UInt8]) async throws(HubError) -> Bool {
    try reach()
    return try await inner.hasBlob(hash: hash)
  }
  func fetchBlob(hash: [UInt8], to fileDescriptor: Int32) async throws(HubError) {
    try reachContent(hash)
    try await inner.fetchBlob(hash: hash, to: fileDescriptor)
  }
  func append(_ records: [HubRecord]) async throws(HubError) {
    try reach()
    try await inner.append(records)
  }
  func records(after cursor: HubCursor, limit: Int) async throws(HubError) -> HubPage {
    try reach()
    return try await inner.records(after: cursor, limit: limit)
  }
  func waitForChanges(after cursor: HubCursor, timeout: Duration) async throws(HubError) -> Bool {
    try reach()
    return try await inner.waitForChanges(after: cursor, timeout: timeout)
  }
  func reportDamagedBlob(hash: [UInt8]) async throws(HubError) -> BlobCondition {
    try reach()
    return try await inner.reportDamagedBlob(hash: hash)
  }
  func wantedBlobs() async throws(HubError) -> [[UInt8]] {
    try reach()
    return try await inner.wantedBlobs()
  }
  func retention() async throws(HubError) -> String? {
    try reach()
    return try await inner.retention()
  }
  func setRetention(_ serialized: String) async throws(HubError) {
    try reach()
    try await inner.setRetention(serialized)
  }
  func prune(records ids: [[UInt8]]) async throws(HubError) {
    try reach()
    try await inner.prune(records: ids)
  }
  func forget(records ids: [[UInt8]]) async throws(HubError) {
    try reach()
    try await inner.forget(records: ids)
  }
  func erasures(after cursor: HubCursor, limit: Int) async throws(HubError) -> ErasurePage {
    try reach()
    return try await inner.erasures(after: cursor, limit: limit)
  }
}

/// Objects pass through as blobs do: refused while the hub is unreachable, and a fetch refused
/// when the test refuses every content or names the object's id among the refused.
extension SwitchableHub: ObjectStore {
  private var objectStore: any ObjectStore {
    get throws(HubError) {
      guard let store = inner as? any ObjectStore else { throw .failed("no object store") }
      return store
    }
  }

  func missingObjects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]] {
    try reach()
    return try await objectStore.missingObjects(ids)
  }
  func putObjects(_ objects: [HubObject]) async throws(HubError) {
    try reach()
    try await objectStore.putObjects(objects)
  }
  func objects(_ ids: [[UInt8]]) async throws(HubError) -> [[UInt8]: [UInt8]] {
    for id in ids { try reachContent(id) }
    return try await objectStore.objects(ids)
  }
  func wantedObjects() async throws(HubError) -> [[UInt8]] {
    try reach()
    return try await objectStore.wantedObjects()
  }
}
