import GRDB
import Glibc
import Synchronization

/// The state database as the store's code reaches it: each write commits the tree's queued
/// changes first, in its own transaction, so the database never holds a later change (a
/// version the engine recorded) without an earlier one (the file it was made from).
final class StateDatabase: @unchecked Sendable {
  private let queue: DatabaseQueue
  private let commits: CommitQueue
  private let workingFiles: Int32
  /// Serializes taking a batch with committing it: two writers that each took a batch could
  /// otherwise commit them out of order, or put a failed one back behind a later one.
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  /// Set once by ``close()``; every use after it fails rather than reach a closed connection.
  private let closed = Atomic<Bool>(false)

  init(queue: DatabaseQueue, commits: CommitQueue, workingFiles: Int32) {
    self.queue = queue
    self.commits = commits
    self.workingFiles = workingFiles
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// One transaction: the queued tree changes, then `body`. Once it has committed and let go
  /// of the database, the working files the commit let go are removed.
  func write<T>(_ body: (Database) throws -> T) throws -> T {
    let (result, removals) = try locked { try commit(body) }
    removeWorkingFiles(removals)
    return result
  }

  /// Commits the queued changes for the commit queue's thread; once the commit has let go of
  /// the database, runs `committed`, and returns the working files that the commit let go,
  /// for the caller to remove elsewhere: an unlink (ext4 freeing the blocks, and discarding
  /// them where the disk is mounted so) took 0.2 ms and more, and the next change's commit,
  /// which an editor's `fsync` was waiting for, waited behind it.
  func commitQueued(then committed: () -> Void) throws -> [UInt64] {
    let removals = try locked { try commit { _ in }.removals }
    committed()
    return removals
  }

  private func locked<T>(_ body: () throws -> T) rethrows -> T {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }

  /// Lets go of the database once a commit in progress is done; what is still queued stays
  /// uncommitted, and every later use throws.
  func close() {
    locked {
      closed.store(true, ordering: .releasing)
      try? queue.close()
    }
  }

  private func checkOpen() throws {
    if closed.load(ordering: .acquiring) {
      throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the state database is closed")
    }
  }

  /// Commits the queued changes, and leaves the working files that the commit lets go to the
  /// queue's thread (after its next commit): for an `fsync`, which waits for neither them nor
  /// their unlinks.
  func commitLeavingRemovals() throws {
    try locked {
      // Taking the lock waited for a commit in progress; with nothing left, an empty
      // transaction would only cost its statements.
      guard commits.hasPending else { return }
      let removals = try commit { _ in }.removals
      if !removals.isEmpty { commits.addRemovals(removals) }
    }
  }

  /// Reads what is committed. The tree's queued changes are not committed first: the engine
  /// reads records here under its lock, and the tree is read back only at load, which flushes.
  func read<T>(_ body: (Database) throws -> T) throws -> T {
    try checkOpen()
    return try queue.read(body)
  }

  /// Runs one statement's read of what is committed, outside any transaction: a single
  /// statement reads one snapshot by itself, and the read-only transaction of ``read(_:)``
  /// (a pragma, a begin, a commit and a pragma around it) cost four more statements for each
  /// record a pull looked up.
  func readStatement<T>(_ body: (Database) throws -> T) throws -> T {
    try checkOpen()
    return try queue.unsafeRead(body)
  }

  /// For what cannot run in a transaction (VACUUM, checkpoints), after committing what is queued.
  func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
    pthread_mutex_lock(mutex)
    var removals: [UInt64] = []
    defer {
      pthread_mutex_unlock(mutex)
      removeWorkingFiles(removals)
    }
    try checkOpen()
    if commits.hasPending { removals = try commit { _ in }.removals }
    return try queue.writeWithoutTransaction(body)
  }

  /// Commits the queued changes and `body`; returns the working files that the commit lets go,
  /// for the caller to remove once it has let go of `mutex`: an unlink costs a millisecond or
  /// more on a busy disk, and an `fsync` on the mount waits for `mutex` to commit its own.
  private func commit<T>(_ body: (Database) throws -> T) throws -> (
    result: T, removals: [UInt64]
  ) {
    try checkOpen()
    let batch = commits.take()
    let result: T
    do {
      result = try queue.writeWithoutTransaction { db in
        try Self.inTransaction(db) {
          try LocalStore.execute(Change.coalesced(batch.changes), in: db)
          return try body(db)
        }
      }
    } catch {
      commits.putBack(batch, failure: LocalStore.failureText(error))
      throw error
    }
    commits.committed()
    return (result, batch.removals)
  }

  /// Runs `body` in a transaction whose BEGIN and COMMIT are prepared once: GRDB's own
  /// transactions compile both from their text every time, which `perf` put at twice the cost
  /// of a save's changes themselves in each of its two commits.
  private static func inTransaction<T>(_ db: Database, _ body: () throws -> T) throws -> T {
    try db.cachedStatement(sql: "BEGIN").execute()
    do {
      let result = try body()
      try db.cachedStatement(sql: "COMMIT").execute()
      return result
    } catch {
      if db.isInsideTransaction { try? db.execute(sql: "ROLLBACK") }
      throw error
    }
  }

  /// Unlinks the working files of `inodes`, whose removal is committed.
  func removeWorkingFiles(_ inodes: [UInt64]) {
    for inode in inodes {
      _ = unlinkat(workingFiles, LocalStore.workingFileName(inode), 0)
    }
  }
}
