import DocumentModel
import Glibc

/// The inode numbers of a virtual tree (`.versions`, `.history`): handed out on first sight of
/// what they stand for and kept for the life of the mount, with the version each file shows.
final class VirtualInodes<Key: Hashable>: @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  private var inodes: [Key: UInt64]
  private var keys: [UInt64: Key]
  private var records: [UInt64: VersionRecord] = [:]
  private var next: UInt64

  /// A table whose `root` inode stands for `rootKey`, and whose other inodes start at `first`.
  init(root: UInt64, rootKey: Key, first: UInt64) {
    pthread_mutex_init(&mutex, nil)
    inodes = [rootKey: root]
    keys = [root: rootKey]
    next = first
  }

  private func withLock<T>(_ body: () -> T) -> T {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return body()
  }

  /// The inode of `key`, new on first sight; remembers `record` as what it shows.
  func inode(for key: Key, record: VersionRecord? = nil) -> UInt64 {
    withLock {
      let inode: UInt64
      if let known = inodes[key] {
        inode = known
      } else {
        inode = next
        next += 1
        inodes[key] = inode
        keys[inode] = key
      }
      if let record { records[inode] = record }
      return inode
    }
  }

  func key(_ inode: UInt64) -> Key? { withLock { keys[inode] } }
  func knows(_ key: Key) -> Bool { withLock { inodes[key] != nil } }
  func record(_ inode: UInt64) -> VersionRecord? { withLock { records[inode] } }
}
