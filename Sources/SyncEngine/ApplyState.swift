import DocumentModel
import LocalStore

/// Remote changes on their way into the tree: the paths that wait to show their current
/// version, the file versions queued to land, those landing now, and the intents the last run
/// left unfinished. Pure: no I/O, no lock of its own.
///
/// Facts that must agree, kept together by the mutating methods:
/// - A queued file version's path is deferred, and stays deferred until the version lands:
///   ``queue(_:)`` defers it, ``settle(_:)`` leaves a queued path deferred, and only
///   ``finish(_:landed:)`` or ``drop(_:)`` let it go.
/// - A path being applied is not taken again until it finishes, and is deferred meanwhile.
struct ApplyState {
  /// Paths whose current version is not shown yet: a local change is pending or recording,
  /// its content is not here, or its file version is queued or landing.
  private(set) var deferred: Set<DocumentPath> = []
  /// Remote file versions to write into the tree, by path: their content is copied outside
  /// the lock (`applyPending`).
  private(set) var pendingApplies: [DocumentPath: FileApply] = [:]
  /// Paths whose remote content is being written, outside the lock.
  private(set) var applying: Set<DocumentPath> = []
  /// Remote changes that were being applied when the last run ended, settled at start.
  private(set) var intents: [ApplyIntent] = []

  init(intents: [ApplyIntent] = []) {
    self.intents = intents
  }

  /// The intents left by the last run, handed over once to be settled.
  mutating func takeIntents() -> [ApplyIntent] {
    defer { intents = [] }
    return intents
  }

  /// `path` waits: the loop brings it up to date later.
  mutating func postpone(_ path: DocumentPath) {
    deferred.insert(path)
  }

  mutating func postpone(contentsOf paths: some Sequence<DocumentPath>) {
    deferred.formUnion(paths)
  }

  /// `path` no longer waits, unless its file version is still queued or landing.
  mutating func settle(_ path: DocumentPath) {
    guard pendingApplies[path] == nil, !applying.contains(path) else { return }
    deferred.remove(path)
  }

  /// Queues a file version to land; its path waits until it does.
  mutating func queue(_ item: FileApply) {
    pendingApplies[item.path] = item
    deferred.insert(item.path)
  }

  /// Takes a batch to land (of every queued version, or of those at `paths`): at most
  /// `maxFiles`, and at most `maxBytes` unless the first alone is larger. Each is marked
  /// applying until ``finish(_:landed:)``.
  mutating func take(only paths: Set<DocumentPath>?, maxFiles: Int, maxBytes: UInt64)
    -> [FileApply]
  {
    var taken: [FileApply] = []
    var bytes: UInt64 = 0
    // In no particular order: each change makes the folders it needs.
    for (path, item) in pendingApplies
    where paths?.contains(path) ?? true && !applying.contains(path) {
      if !taken.isEmpty && (taken.count >= maxFiles || bytes + item.size > maxBytes) { break }
      taken.append(item)
      bytes += item.size
    }
    for item in taken {
      pendingApplies[item.path] = nil
      applying.insert(item.path)
    }
    return taken
  }

  /// A taken version is done: its path stops waiting if it landed and still shows the current
  /// version (`landed`), and waits for the loop otherwise.
  mutating func finish(_ path: DocumentPath, landed: Bool) {
    applying.remove(path)
    if landed && pendingApplies[path] == nil {
      deferred.remove(path)
    } else {
      deferred.insert(path)
    }
  }

  /// Whether the queued versions fill a batch, by files or by bytes.
  func fillsBatch(maxFiles: Int, maxBytes: UInt64) -> Bool {
    guard pendingApplies.count < maxFiles else { return true }
    var bytes: UInt64 = 0
    for item in pendingApplies.values {
      bytes = saturatingSum(bytes, item.size)
      if bytes >= maxBytes { return true }
    }
    return false
  }

  /// Whether `path` is being applied now (a remote change to it must wait).
  func isApplying(_ path: DocumentPath) -> Bool { applying.contains(path) }

  /// Forgets everything about `path` (its versions are gone): nothing lands there, nothing waits.
  mutating func drop(_ path: DocumentPath) {
    pendingApplies[path] = nil
    deferred.remove(path)
  }
}
