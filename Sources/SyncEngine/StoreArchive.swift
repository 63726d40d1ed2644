import DocumentModel
import LocalStore
import Logging

/// The local database as the archive of the engine's `VersionSet`: the records that are not
/// heads stay there and are decoded when a decision needs them.
///
/// A stored record that fails its check (an earlier docsync stored remote records unchecked)
/// reads as absent, as it was left out at load before records stayed on disk.
struct StoreArchive: VersionArchive {
  let store: LocalStore
  let logger: Logger

  func record(_ id: VersionID) -> VersionRecord? {
    // A record that is not stored is absent, not one that fails its check: a pull asks for
    // every record it brings, and logged a line for each.
    guard
      let payload = read({ () throws(LocalStoreError) in try store.storedPayload(id.bytes) }),
      let payload
    else { return nil }
    return Self.decode(id.bytes, payload, logger: logger)
  }

  func followers(of id: VersionID) -> [VersionID] {
    (read { () throws(LocalStoreError) in try store.followers(of: id.bytes) } ?? [])
      .compactMap { Digest256(bytes: $0).map(VersionID.init) }
  }

  func records(at path: DocumentPath) -> [VersionRecord] {
    (read { () throws(LocalStoreError) in try store.storedVersions(at: path.bytes) } ?? [])
      .compactMap { Self.decode($0.id, $0.payload, logger: logger) }
  }

  func versions(withContent hash: ContentHash) -> [VersionID] {
    (read { () throws(LocalStoreError) in try store.versionIDs(withContent: hash.bytes) } ?? [])
      .compactMap { Digest256(bytes: $0).map(VersionID.init) }
  }

  func isReleased(_ id: VersionID) -> Bool {
    read { () throws(LocalStoreError) in try store.isReleased(id.bytes) } ?? false
  }

  func hasEarlierVersions(at path: DocumentPath) -> Bool {
    read { () throws(LocalStoreError) in try store.hasHistory(at: path.bytes) } ?? false
  }

  private func read<T>(_ body: () throws(LocalStoreError) -> T) -> T? {
    do {
      return try body()
    } catch {
      logger.error("cannot read version records: \(error)")
      return nil
    }
  }

  /// The record stored under `id`, when it passes its checks; nil (and a log line) when not.
  static func decode(_ id: [UInt8], _ payload: [UInt8], logger: Logger) -> VersionRecord? {
    guard let digest = Digest256(bytes: id),
      let record = try? VersionRecord(decoding: payload, expectedID: VersionID(digest))
    else {
      logger.error("a stored version record fails its check and is ignored")
      return nil
    }
    if let problem = RecordCheck.structuralProblem(with: record) {
      logger.error("stored version \(record.id.hex) is ignored: \(problem)")
      return nil
    }
    return record
  }
}

extension VersionRecord {
  /// The record as the local store keeps it, with the fields it indexes.
  public var stored: StoredVersion {
    StoredVersion(
      id: id.bytes, payload: encoded, path: path.bytes, parents: parents.map(\.bytes),
      isDocument: kind == .file || kind == .symlink, contentHash: content.blobHash?.bytes)
  }
}
