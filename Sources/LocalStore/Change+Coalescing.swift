extension Change {
  /// The row a change writes or deletes; a later change of the same row decides what it holds.
  private enum Row: Hashable {
    case inode(UInt64)
    case entry(parent: UInt64, name: [UInt8])
    case extendedAttribute(inode: UInt64, name: [UInt8])
    case nextInode
  }

  /// `changes` without those that a later change of the same row makes moot, in their order:
  /// the same rows result. A burst of creates in one folder queues the folder's row and the
  /// next inode number once per file; a grouped commit then writes each of them once.
  ///
  /// `deleteInode` also deletes the inode's extended attributes, so it is always kept; it makes
  /// earlier writes of the inode's own row moot, as a later write of that row does.
  static func coalesced(_ changes: [Change]) -> [Change] {
    guard changes.count > 1 else { return changes }
    var decided: Set<Row> = []
    var kept: [Change] = []
    kept.reserveCapacity(changes.count)
    for change in changes.reversed() {
      switch change {
      case .putInode(let record):
        if !decided.insert(.inode(record.inode)).inserted { continue }
      case .deleteInode(let inode):
        decided.insert(.inode(inode))
      case .putEntry(let entry):
        if !decided.insert(.entry(parent: entry.parent, name: entry.name)).inserted { continue }
      case .deleteEntry(let parent, let name):
        if !decided.insert(.entry(parent: parent, name: name)).inserted { continue }
      case .putExtendedAttribute(let attribute):
        let row = Row.extendedAttribute(inode: attribute.inode, name: attribute.name)
        if !decided.insert(row).inserted { continue }
      case .deleteExtendedAttribute(let inode, let name):
        if !decided.insert(.extendedAttribute(inode: inode, name: name)).inserted { continue }
      case .setNextInode:
        if !decided.insert(.nextInode).inserted { continue }
      }
      kept.append(change)
    }
    return kept.reversed()
  }
}
