/// What ``PackageSnapshotPlanner`` says to do with a package now.
public enum PackageSnapshotDecision: Hashable, Sendable {
  /// Nothing changed since the last snapshot started: no new version.
  case upToDate
  /// Read the whole package now, then ask ``PackageSnapshotPlanner/isConsistent(startedAt:files:lastRemoval:)``
  /// before using what was read.
  case snapshotNow
  /// The package is not quiet yet: ask again at this monotonic time (milliseconds).
  case waitUntil(UInt64)
  /// These files are open for writing: ask again when the last of them closes.
  case waitForWriters([DocumentPath])
}
