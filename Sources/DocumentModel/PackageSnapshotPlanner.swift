/// When to take a package's snapshot: the pure rule (no clock, no I/O) that makes one `git
/// commit`, which writes twenty files and renames a few, one package version and never half
/// of one.
///
/// A snapshot is taken when no file in the package is open for writing and nothing in it has
/// changed for the quiet window, the same moment after which a single document's save becomes
/// a version. Reading every file then takes time while programs go on, so the read is
/// optimistic: the engine notes when it started, reads, and keeps the snapshot only if
/// ``isConsistent(startedAt:files:lastRemoval:)`` says nothing changed or opened for writing
/// meanwhile; otherwise it asks ``decide(files:lastRemoval:lastSnapshotStarted:now:quietMilliseconds:)``
/// again. No writer is ever made to wait for a snapshot.
public enum PackageSnapshotPlanner {
  /// What to do with one package now.
  ///
  /// - Parameters:
  ///   - files: every file in the package that has changed or is open since the mount knew it
  ///     (files neither changed nor open may be left out).
  ///   - lastRemoval: when something in the package was last removed, renamed away or made
  ///     (a folder, a symlink), which no surviving file's time shows; nil when nothing was.
  ///   - lastSnapshotStarted: when the last snapshot that was kept started reading; changes
  ///     before it are in it. Nil before the first one.
  ///   - now: the engine's monotonic milliseconds.
  ///   - quietMilliseconds: the quiet window.
  public static func decide(
    files: [PackageFileActivity], lastRemoval: UInt64?, lastSnapshotStarted: UInt64?,
    now: UInt64, quietMilliseconds: UInt64
  ) -> PackageSnapshotDecision {
    var latest = lastRemoval
    for file in files { latest = max(latest ?? file.lastChange, file.lastChange) }
    // A change in the very millisecond a snapshot started may have been missed by its read:
    // only changes strictly before the start are in it. A file open for writing that has not
    // changed since holds nothing new yet (a database a program keeps open): up to date.
    guard let latest, latest >= lastSnapshotStarted ?? 0 else { return .upToDate }
    let writers = files.filter { $0.writers > 0 }.map(\.path).sorted()
    if !writers.isEmpty { return .waitForWriters(writers) }
    let (quietEnd, overflow) = latest.addingReportingOverflow(quietMilliseconds)
    if overflow { return .waitUntil(.max) }
    return now >= quietEnd ? .snapshotNow : .waitUntil(quietEnd)
  }

  /// Whether a snapshot whose read started at `startedAt` holds one consistent state of the
  /// package: no file was open for writing when the read ended, and nothing changed from its
  /// start on. `files` and `lastRemoval` are as the mount knows them when the read has ended.
  public static func isConsistent(
    startedAt: UInt64, files: [PackageFileActivity], lastRemoval: UInt64?
  ) -> Bool {
    if let lastRemoval, lastRemoval >= startedAt { return false }
    return files.allSatisfy { $0.writers == 0 && $0.lastChange < startedAt }
  }
}
