/// One content held on this device, as the eviction planner weighs it: how many bytes it
/// takes here, when it was last read, and what keeps it (files on demand).
public struct EvictionCandidate: Sendable, Hashable {
  /// What the caller evicts by (a working file's inode, a kept blob's hash).
  public let key: String
  /// Bytes it takes on this device (blocks, not its size: a partial file takes less).
  public let bytes: UInt64
  /// When it was last read or written here, in milliseconds: the least recent goes first.
  public let lastUsedMilliseconds: Int64
  /// Pinned by the person (`docsync pin`), itself or through a folder.
  public let isPinned: Bool
  /// Open or mapped by a program now.
  public let isOpen: Bool
  /// Holds changes the hub does not have yet: never evicted, whatever the budget.
  public let isUnsynced: Bool

  public init(
    key: String, bytes: UInt64, lastUsedMilliseconds: Int64, isPinned: Bool = false,
    isOpen: Bool = false, isUnsynced: Bool = false
  ) {
    self.key = key
    self.bytes = bytes
    self.lastUsedMilliseconds = lastUsedMilliseconds
    self.isPinned = isPinned
    self.isOpen = isOpen
    self.isUnsynced = isUnsynced
  }

  /// Whether a budget may take it: nothing pinned, open, mapped or unsynced.
  public var isEvictable: Bool { !isPinned && !isOpen && !isUnsynced }
}
