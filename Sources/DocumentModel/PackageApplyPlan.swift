/// How a package version from another device lands on this device so that no reader ever sees
/// a mix of two versions (docs/packages.md, "Landing a version at once").
///
/// The mechanism it serves: the file system builds the new version's whole tree aside, out of
/// sight (``staging``, folders before what they hold), then, under its tree lock, puts the
/// staged folder in the package folder's place in one step, as `rename(2)` of a folder over
/// another would, and only then tells the kernel that the one name changed. Every path walk
/// that starts after the swap goes through the new folder and finds only new entries; one that
/// started before (a program whose working folder is the old package, an open folder handle)
/// goes on in the old folder, which stays whole until nothing holds it. Unchanged files cost
/// nothing: the staged tree shares their working files. The swap is valid only if the package
/// still shows ``from`` when it happens (no local change since the plan was made) and nothing
/// in it is open for writing; otherwise the engine snapshots what the package shows and plans
/// again (which may make a conflict of the package, never a mix).
public struct PackageApplyPlan: Hashable, Sendable {
  /// The content hash of the manifest the package shows now.
  public let from: ContentHash
  /// The content hash of the manifest the package shows after the swap.
  public let to: ContentHash
  /// Every entry of the new version, each once, folders before their contents.
  public let staging: [PackageStagingStep]
  /// One file entry per content to fetch before staging (the first path that names it),
  /// sorted by content hash: content the shown package holds nowhere.
  public let fetch: [PackageEntry]
  /// What the swap changes, path by path: what the kernel's caches and the announcements to
  /// programs that watch files need (each added, removed, changed and retimed path).
  public let changes: PackageDiff

  /// The plan that makes a package showing `shown` show `remote`.
  public init(shown: PackageManifest, remote: PackageManifest) {
    let changes = shown.diff(to: remote)
    var holder: [ContentHash: DocumentPath] = [:]
    for entry in shown.entries {
      if let hash = entry.fileHash, holder[hash] == nil { holder[hash] = entry.path }
    }
    var fetch: [ContentHash: PackageEntry] = [:]
    var staging: [PackageStagingStep] = []
    staging.reserveCapacity(remote.entries.count)
    for entry in remote.entries {
      switch entry.content {
      case .folder:
        staging.append(.makeFolder(entry))
      case .symlink:
        staging.append(.makeSymlink(entry))
      case .file(let hash, _, _):
        let there = shown.entry(at: entry.path)
        if let there, there.holdsTheSame(as: entry), there.modified == entry.modified {
          staging.append(.share(entry))
        } else if let source = there?.fileHash == hash ? there?.path : holder[hash] {
          staging.append(.copy(entry, from: source))
        } else {
          staging.append(.write(entry))
          if fetch[hash] == nil { fetch[hash] = entry }
        }
      }
    }
    self.from = shown.contentHash
    self.to = remote.contentHash
    self.staging = staging
    self.fetch = fetch.sorted { $0.key < $1.key }.map(\.value)
    self.changes = changes
  }

  /// Bytes to fetch before staging: each content once.
  public var fetchBytes: UInt64 { fetch.reduce(0) { $0 + $1.size } }
}
