import Dispatch
import DocumentModel
import Glibc
import LocalStore

extension SyncEngine {
  // MARK: - History, for `.history` and `docsync history`

  /// The entries of `.history/<folder>/`: names that lead to documents with earlier versions,
  /// and the earlier versions of the document at `folder` itself (read from the local database).
  /// O(entries), under the lock.
  public func historyListing(_ folder: DocumentPath) -> (
    folders: [[UInt8]], versions: [VersionRecord]
  ) {
    withLock {
      (
        library.history.folders(in: folder),
        library.history.earlierVersions(at: folder, in: library.known)
      )
    }
  }

  /// Whether `.history/<path>/` exists.
  public func hasHistoryFolder(_ path: DocumentPath) -> Bool {
    withLock { library.history.hasFolder(path) }
  }

  /// Every known version of `path` that retention has not released, oldest first by the order
  /// of versions (their hybrid logical clock), the ids of its heads and of its earlier versions.
  public func versionsOverTime(of path: DocumentPath) -> (
    versions: [VersionRecord], heads: Set<VersionID>, earlier: Set<VersionID>
  ) {
    withLock {
      let versions = library.known.records(at: path).filter {
        !library.history.isReleased($0.id, in: library.known)
      }
      .sorted { ($0.modified, $0.id) < ($1.modified, $1.id) }
      return (
        versions, Set(library.known.heads(at: path).map(\.id)),
        Set(library.history.earlierVersions(at: path, in: library.known).map(\.id))
      )
    }
  }

  /// The version's content open for reading, fetched from the hub first when this
  /// device does not hold it (an earlier version pulled in the same page as a later one is
  /// never fetched by pulling). Blocks the calling thread for the fetch, with no lock held;
  /// nil when the content cannot be had (offline, or gone from the hub).
  public func contentFileFetching(_ record: VersionRecord, timeout: Duration = .seconds(120))
    -> ContentFile?
  {
    guard let hash = record.content.blobHash else { return nil }
    if !withLock({ holdsContent(hash, preferring: record.path) }) {
      let size = record.content.size ?? 0
      withLock { connection.noteDownloadNeeded(files: 1, bytes: size) }
      let done = DispatchSemaphore(value: 0)
      // On the engine's own thread: this FUSE thread waits below, and a task on the shared
      // pool would never run while enough such waits block every thread of the pool.
      Task(executorPreference: executor) { [self] in
        do {
          _ = try await fetchBlob(hash)
        } catch {
          logger.error("cannot fetch \(record.path) from the hub for .history: \(error)")
        }
        withLock { connection.noteDownloaded(files: 1, bytes: size) }
        done.signal()
      }
      let nanoseconds = timeout.components.seconds * 1_000_000_000
      guard done.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success,
        blobs.contains(hash)
      else { return nil }
    }
    return contentFile(of: record)
  }
}
