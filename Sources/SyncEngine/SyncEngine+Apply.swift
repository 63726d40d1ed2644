import Crypto
import DocumentModel
import Glibc
import LocalStore

extension SyncEngine {
  /// Writes the queued remote file versions (all of them, or those at `paths`) into the tree.
  /// Called without the lock: every copy, hash and fsync happens outside it and outside the
  /// tree's, which only sees a rename.
  func applyPending(only paths: Set<DocumentPath>? = nil) {
    while true {
      let batch = withLock { () -> [FileApply] in
        var taken: [FileApply] = []
        var bytes: UInt64 = 0
        // In no particular order: each change makes the folders it needs.
        for (path, item) in pendingApplies
        where paths?.contains(path) ?? true && !applying.contains(path) {
          // Batches share one journal sync and one fsync per folder; big files go alone.
          if !taken.isEmpty && (taken.count >= 64 || bytes + item.size > Self.applyBatchBytes) {
            break
          }
          taken.append(item)
          bytes += item.size
        }
        for item in taken {
          pendingApplies[item.path] = nil
          applying.insert(item.path)
        }
        return taken
      }
      guard !batch.isEmpty else { return }
      execute(batch)
    }
  }

  static let applyBatchBytes: UInt64 = 64 << 20

  /// Lands a batch: content into new working files (durable), then the intents (durable),
  /// then the names, the folders' fsync, and what each path shows, in one transaction.
  private func execute(_ batch: [FileApply]) {
    var ready: [(item: FileApply, incoming: String)] = []
    var landed: [(item: FileApply, entry: LocalEntry?)] = []
    defer {
      withLock {
        for item in batch {
          applying.remove(item.path)
          let done = landed.contains { $0.item.path == item.path }
          if done, case .document(let record)? = state.entries[item.path], record == item.target {
            deferred.remove(item.path)
          } else {
            deferred.insert(item.path)
          }
        }
      }
    }
    guard let tree = withLock({ self.tree }) else { return }
    // Many small files are made durable together with one flush, not one fsync each.
    let together = batch.count > 1
    for item in batch {
      if let incoming = prepare(item, durable: !together) { ready.append((item, incoming)) }
    }
    guard !ready.isEmpty else { return }
    // The new working files, and the blobs' names (the pulled records that name them become
    // durable with the journal sync below), reach the disk first.
    if together {
      store.syncEverything()
    } else {
      store.syncBlobFolders(of: ready.map(\.item.hash.hex))
    }
    // A crash from here on leaves intents: the next start finishes or forgets each one, and
    // never takes the content it was writing for a local edit.
    do {
      try persist(
        ready.map {
          .beginApply(
            ApplyIntent(
              path: $0.item.path.bytes, versionID: $0.item.target.id.bytes,
              contentHash: $0.item.hash.bytes))
        })
    } catch {
      logger.error("cannot record remote changes before applying them: \(error)")
      for (_, incoming) in ready { store.removeIncomingFile(incoming) }
      return
    }
    store.syncJournal()
    for (item, incoming) in ready {
      let wanted = withLock { () -> Bool in
        guard case .document(let record)? = state.entries[item.path] else { return false }
        return record == item.target
      }
      guard wanted else {
        store.removeIncomingFile(incoming)
        continue
      }
      switch tree.apply(
        .file(path: item.path, incoming: incoming, executable: item.executable),
        expected: item.expected)
      {
      case .applied(let entry): landed.append((item, entry))
      case .skipped: store.removeIncomingFile(incoming)
      }
    }
    // The new names must reach the disk before what the paths show is recorded, or a power
    // cut would bring the old content back under a record that says otherwise. One fsync per
    // folder after the whole batch: the first commits every rename of the batch at once.
    var renamed = ready.map(\.incoming)
    for case (_, .file(let inode, _, _, _, _)?) in landed {
      renamed.append(LocalStore.workingFileName(inode))
    }
    store.syncFolders(of: renamed)
    withLock {
      var changes: [SyncChange] = landed.map {
        .show(shownRecord($0.item.path, $0.item.target, $0.entry))
      }
      changes += ready.map { .endApply(path: $0.item.path.bytes) }
      do {
        try persist(changes)
      } catch {
        // The intents stay: the next start sees what the paths show.
        logger.error("cannot remember what remote changes show: \(error)")
        return
      }
      for (item, entry) in landed { shown[item.path] = shownRecord(item.path, item.target, entry) }
    }
  }

  /// Copies a blob into a new working file, checking it against its hash as it goes, with
  /// the version's time, and makes it durable (here, or with its batch when `durable` is
  /// false); nil when it cannot (the blob is damaged or missing: it is dropped, so that it is
  /// fetched again).
  private func prepare(_ item: FileApply, durable: Bool) -> String? {
    guard let (incoming, fd) = store.createIncomingFile() else {
      logger.error("cannot write \(item.path): \(String(cString: strerror(errno)))")
      return nil
    }
    var keep = false
    defer {
      close(fd)
      if !keep { store.removeIncomingFile(incoming) }
    }
    let source = open(blobs.path(item.hash), O_RDONLY | O_CLOEXEC)
    guard source >= 0 else {
      withLock { noteMissing(item.hash) }
      return nil
    }
    defer { close(source) }
    var hasher = SHA256()
    // No larger than the file: a batch of small files must not clear a MiB for each.
    var buffer = [UInt8](repeating: 0, count: Int(min(max(item.size, 4096) + 1, 1 << 20)))
    while true {
      let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      if n < 0 {
        logger.error("cannot read the content of \(item.path): \(String(cString: strerror(errno)))")
        return nil
      }
      if n == 0 { break }
      buffer.withUnsafeBytes {
        hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n]))
      }
      guard writeAll(fd, buffer, count: n) else {
        logger.error("cannot write \(item.path): \(String(cString: strerror(errno)))")
        return nil
      }
    }
    guard hasher.finalize().withUnsafeBytes({ Array($0) }) == item.hash.bytes else {
      logger.error("local blob \(item.hash.hex) does not match its hash; fetching it again")
      blobs.remove(item.hash)
      withLock { noteMissing(item.hash, .damagedHere) }
      return nil
    }
    let time = timespec(
      tv_sec: Int(item.modificationTime.floorDivided(by: 1_000_000_000)),
      tv_nsec: Int(item.modificationTime.floorRemainder(by: 1_000_000_000)))
    _ = futimens(fd, [time, time])
    guard !durable || fsync(fd) == 0 else {
      logger.error("cannot write \(item.path): \(String(cString: strerror(errno)))")
      return nil
    }
    keep = true
    return incoming
  }
}

extension Int64 {
  fileprivate func floorDivided(by divisor: Int64) -> Int64 {
    let quotient = self / divisor
    return self % divisor < 0 ? quotient - 1 : quotient
  }

  fileprivate func floorRemainder(by divisor: Int64) -> Int64 {
    let remainder = self % divisor
    return remainder < 0 ? remainder + divisor : remainder
  }
}
