import DocumentModel
import SyncEngine

/// What a conflict's start or end changes in `.versions`, as announcements of its entries: a
/// folder for each document in conflict (and the folders toward it), a file for each of its
/// conflict versions. The views (`merged`, `base`) are left out: they follow the versions.
extension DocumentFileSystem {
  /// The conflict versions of every document, as `.versions` shows them now. Asks the engine:
  /// never under the tree lock.
  func conflictVersions() -> [DocumentPath: [VersionRecord]] {
    engine?.conflicts() ?? [:]
  }

  /// Takes what `.versions` shows now as what watchers have heard of: called by the announcing
  /// thread when it starts.
  public func rememberConflicts() {
    announcements.shownConflicts = conflictVersions()
  }

  /// The entries of `.versions` that appeared or vanished for the documents at `paths` since
  /// they were last announced: new folders from the top down, then new versions,
  /// then vanished versions of documents still in conflict, then the topmost vanished folders
  /// (which take what they held with them).
  ///
  /// Nothing that vanished from a document a local request changed (`local`) is announced,
  /// nor a folder that held one: the kernel raised the events of what the request removed, and
  /// the program that made it may be removing the rest right now (`rm -r` removes the versions,
  /// then the folder, which must still be there for it).
  public func versionsAnnouncements(at paths: Set<DocumentPath>, local: Set<DocumentPath> = [])
    -> [Announcement]
  {
    var shown = announcements.shownConflicts
    defer { announcements.shownConflicts = shown }
    let now = conflictVersions()
    // Read after the conflicts: a local change that they show already is posted by then (the
    // engine posts it before it lets go of its lock), though not taken yet.
    let local = local.union(announcements.pendingLocalConflicts())
    let localFolders = Self.folders(of: local)
    let before = Self.folders(of: Set(shown.keys))
    let after = Self.folders(of: Set(now.keys))
    let touched = Self.folders(of: paths).sorted {
      $0.components.count < $1.components.count
    }
    var created: [Announcement] = []
    var removed: [Announcement] = []
    for folder in touched where after.contains(folder) && !before.contains(folder) {
      created.append(entry(.created(.directory), folder, inode: inode(ofFolder: folder)))
    }
    for path in paths {
      let old = Dictionary(
        (shown[path] ?? []).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
      let new = Dictionary(
        (now[path] ?? []).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
      for (id, record) in new where old[id] == nil {
        created.append(version(.created(.file), record, in: path))
      }
      for (id, record) in old where new[id] == nil && after.contains(path) && !local.contains(path)
      {
        removed.append(version(.removed(.file), record, in: path))
      }
      shown[path] = now[path]
    }
    for folder in touched.reversed()
    where before.contains(folder) && !after.contains(folder)
      && (folder.parent.isRoot || after.contains(folder.parent)) && !localFolders.contains(folder)
    {
      removed.append(entry(.removed(.directory), folder, inode: inode(ofFolder: folder)))
    }
    return created + removed
  }

  /// Every folder of `.versions` that documents at `paths` need: each path and its parents.
  private static func folders(of paths: Set<DocumentPath>) -> Set<DocumentPath> {
    var result: Set<DocumentPath> = []
    for path in paths {
      var current = path
      while !current.isRoot, result.insert(current).inserted { current = current.parent }
    }
    return result
  }

  private func inode(ofFolder path: DocumentPath) -> UInt64 {
    path.isRoot ? Self.versionsInode : versions.inode(for: .folder(path))
  }

  /// The announcement of the `.versions` entry at `path`, which the raising process reaches
  /// through `.versions/<path's parent>`.
  private func entry(_ kind: Announcement.Kind, _ path: DocumentPath, inode: UInt64)
    -> Announcement
  {
    Announcement(
      kind, parent: self.inode(ofFolder: path.parent),
      parentPath: DocumentPath(components: [Self.versionsName] + path.parent.components),
      name: path.name, inode: inode)
  }

  private func version(_ kind: Announcement.Kind, _ record: VersionRecord, in path: DocumentPath)
    -> Announcement
  {
    Announcement(
      kind, parent: inode(ofFolder: path),
      parentPath: DocumentPath(components: [Self.versionsName] + path.components),
      name: VersionsName.name(for: record),
      inode: versions.inode(for: .version(record.id), record: record))
  }
}
