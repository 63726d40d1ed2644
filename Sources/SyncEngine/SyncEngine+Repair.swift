import DocumentModel
import Glibc
import Hub
import LocalStore

extension SyncEngine {
  /// The local file that holds a version's content, checked against its hash (once per change
  /// of the file), so that a conflict version never reads as wrong bytes: nil when it is
  /// missing or damaged, and then it is fetched again. Called without the lock.
  public func contentPath(of record: VersionRecord) -> String? {
    guard let hash = record.content.blobHash else { return nil }
    let path = blobs.path(hash)
    var info = stat()
    guard stat(path, &info) == 0 else {
      withLock { noteMissing(hash) }
      return nil
    }
    let identity = BlobIdentity(info)
    if withLock({ verifiedBlobs[hash] == identity }) { return path }
    guard blobs.verify(hash) else {
      logger.error("local blob \(hash.hex) does not match its hash; fetching it again")
      blobs.remove(hash)
      withLock {
        verifiedBlobs[hash] = nil
        noteMissing(hash)
      }
      return nil
    }
    withLock { verifiedBlobs[hash] = identity }
    return path
  }

  /// Asks the loop to fetch a blob that is missing or was found damaged. Called with the lock
  /// held.
  func noteMissing(_ hash: ContentHash) {
    if missingBlobs[hash] == nil {
      missingBlobs[hash] = (retryAt: 0, backoff: 1000)
      changeLog.wake.signal()
    }
  }

  /// Fetches the missing blobs that are due, each checked on arrival; one that the hub cannot
  /// give right (missing there, or damaged) is tried again later, less and less often.
  func fetchMissingBlobs() async throws(SyncError) {
    let now = monotonicMilliseconds()
    let due = withLock {
      missingBlobs.filter { $0.value.retryAt <= now }.map(\.key).sorted()
    }
    for hash in due {
      if !blobs.contains(hash) { try await fetchBlob(hash) }
      withLock {
        if blobs.contains(hash) {
          missingBlobs[hash] = nil
          logger.info("fetched blob \(hash.hex) again")
        } else if let entry = missingBlobs[hash] {
          missingBlobs[hash] = (
            retryAt: monotonicMilliseconds() + entry.backoff,
            backoff: min(entry.backoff * 2, 60_000)
          )
        }
      }
    }
  }
}

/// What identifies one state of a blob file: a blob checked in that state need not be again.
struct BlobIdentity: Equatable {
  var inode: UInt
  var size: Int
  var modificationTime: timespec
  var changeTime: timespec

  init(_ info: stat) {
    inode = info.st_ino
    size = info.st_size
    modificationTime = info.st_mtim
    changeTime = info.st_ctim
  }

  static func == (lhs: BlobIdentity, rhs: BlobIdentity) -> Bool {
    lhs.inode == rhs.inode && lhs.size == rhs.size
      && lhs.modificationTime.tv_sec == rhs.modificationTime.tv_sec
      && lhs.modificationTime.tv_nsec == rhs.modificationTime.tv_nsec
      && lhs.changeTime.tv_sec == rhs.changeTime.tv_sec
      && lhs.changeTime.tv_nsec == rhs.changeTime.tv_nsec
  }
}
