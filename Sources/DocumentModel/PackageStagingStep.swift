/// One step of building a package version's tree aside, before the swap that shows it (see
/// ``PackageApplyPlan``).
public enum PackageStagingStep: Hashable, Sendable {
  /// Make this folder, with its mode.
  case makeFolder(PackageEntry)
  /// The shown package holds this very file at the same path (bytes, mode and time): the
  /// staged tree shares it (a hard link of its working file), no bytes are read or written.
  case share(PackageEntry)
  /// The shown package holds these bytes at `from` (the same path with another mode or time,
  /// or another path: a file moved inside the package): copy them locally, then set the
  /// entry's mode and time. Nothing is fetched.
  case copy(PackageEntry, from: DocumentPath)
  /// Bytes the shown package does not hold: write them from fetched content (the plan's
  /// ``PackageApplyPlan/fetch`` lists it), then set mode and time.
  case write(PackageEntry)
  /// Make this symlink, with its time.
  case makeSymlink(PackageEntry)

  /// The entry the step makes.
  public var entry: PackageEntry {
    switch self {
    case .makeFolder(let entry), .share(let entry), .copy(let entry, _), .write(let entry),
      .makeSymlink(let entry):
      entry
    }
  }
}
