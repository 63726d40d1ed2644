import DocumentModel
import Glibc
import Hub
import LocalStore

/// Sends the hub the versions that a damaged state had recorded and not yet sent, so that a
/// state rebuilt from the hub holds them too: the rest of what the damaged state knew is on
/// the hub already.
///
/// Nothing a damaged database says is taken on trust: each record must hash to its id, and
/// each content must hash to the name its record gives it, or it is left out and counted.
public enum DamagedStateRecovery {
  /// What one recovery did.
  public struct Report: Sendable, Equatable {
    /// Versions now on the hub.
    public var recovered = 0
    /// Paths of versions whose content neither the blobs nor the set-aside working files hold.
    public var withoutContent: [String] = []
    /// Rows that did not hash to their id, or did not decode.
    public var unreadable = 0
    /// What stopped the reading of the outbox, when something did.
    public var problem: String?

    public init() {}
  }

  /// Recovers `state`'s unsynced versions onto `hub`, each version's content from the state's
  /// blob at `blobPath(hex)` or from a set-aside working file of its size; marks the state
  /// recovered once the hub has them. Idempotent: a hub ignores records and blobs it has.
  public static func recover(
    _ state: SetAsideState, blobPath: (String) -> String, hub: any Hub
  ) async throws(SyncError) -> Report {
    var report = Report()
    let (rows, problem) = state.unsyncedRecords()
    report.problem = problem
    var ready: [HubRecord] = []
    var workingFiles: [UInt64: [String]]?
    for row in rows {
      guard let digest = Digest256(bytes: row.id),
        let record = try? VersionRecord(decoding: row.payload, expectedID: VersionID(digest))
      else {
        report.unreadable += 1
        continue
      }
      if case .file(let hash, let size, _) = record.content {
        var provided = try await provide(hash, size: size, from: [blobPath(hash.hex)], to: hub)
        if !provided {
          if workingFiles == nil { workingFiles = state.workingFilesBySize() }
          provided = try await provide(
            hash, size: size, from: workingFiles?[size] ?? [], to: hub)
        }
        guard provided else {
          report.withoutContent.append(record.path.description)
          continue
        }
      }
      ready.append(
        HubRecord(
          id: record.id.bytes, payload: record.encoded,
          blobs: record.content.blobHash.map { [$0.bytes] } ?? []))
    }
    // In pages, as a push sends them: weeks offline can leave tens of thousands.
    for start in stride(from: 0, to: ready.count, by: 512) {
      do {
        try await hub.append(Array(ready[start..<min(start + 512, ready.count)]))
      } catch {
        throw SyncError(error)
      }
    }
    report.recovered = ready.count
    do {
      try state.markRecovered()
    } catch {
      throw .local(error.description)
    }
    return report
  }

  /// Puts content `hash` on the hub from the first of `candidates` that holds exactly it;
  /// false when none does and the hub lacks it.
  private static func provide(
    _ hash: ContentHash, size: UInt64, from candidates: [String], to hub: any Hub
  ) async throws(SyncError) -> Bool {
    do {
      if try await hub.hasBlob(hash: hash.bytes) { return true }
    } catch {
      throw SyncError(error)
    }
    for candidate in candidates {
      guard let file = ContentFile(setAside: candidate), let (read, found) = file.digest(),
        UInt64(read) == size, found == hash
      else { continue }
      do {
        // Not `checked`: the hub hashes what it stores once more, as for any upload.
        try await hub.putBlob(hash: hash.bytes, from: file.descriptor, checked: false)
        return true
      } catch .integrity {
        continue
      } catch {
        throw SyncError(error)
      }
    }
    return false
  }
}
