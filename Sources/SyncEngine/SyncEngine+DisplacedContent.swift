import DocumentModel
import Glibc
import LocalStore

extension SyncEngine {
  // MARK: - Content a remote change displaces
  //
  // A document's content lives once, in its clean working file (see `cleanWorkingFile`). When
  // a remote change takes the path from it (another device's edit wins, a folder takes the
  // path, the document is deleted), the file goes, and with it the only copy here of a
  // version that may still be read: a conflict version in `.versions`, or an earlier version
  // this device wrote, in `.history`. Such content gets a second name in the blob folder
  // before the file goes: no copy, and nothing to fetch, offline too.

  /// Whether the content of `version`, which `path` shows and is about to stop showing, stays
  /// here as a blob: it is a conflict version's, or this device wrote it (kept like any
  /// earlier version's content read in `.history`: a cache that the trim bounds). Called with
  /// the lock held.
  func keepsContent(ofDisplaced version: VersionRecord, at path: DocumentPath) -> Bool {
    guard let hash = version.content.blobHash else { return false }
    if version.deviceID == library.author.deviceID { return true }
    return library.state.conflicts[path]?.contains { $0.content.blobHash == hash } ?? false
  }

  /// Gives the clean working file that `path` shows the blob name of its content, when a
  /// remote change is about to replace it with a folder, a symlink or nothing and
  /// ``keepsContent(ofDisplaced:at:)`` says the content stays. A link, not a copy: nothing
  /// writes the file any more (a path with a writer is never changed by sync), and readers
  /// check content against its hash. The name is not flushed: a power cut may take it, and
  /// the content is then fetched from the hub as before.
  ///
  /// Returns what the change must expect at the path: `local`, or the file with the change
  /// time that its second name gave it. Called with the lock held.
  func keepDisplacedContent(
    at path: DocumentPath, local: LocalEntry?, shown record: ShownRecord?,
    version: VersionRecord?
  ) -> LocalEntry? {
    guard let version, let record, case .file(let hash, _, _) = version.content,
      case .file(let inode, let size, let mtime, let ctime, let executable)? = local,
      record.size == size, record.modificationTime == mtime, record.changeTime == ctime,
      !blobs.contains(hash), keepsContent(ofDisplaced: version, at: path)
    else { return local }
    do throws(ContentError) {
      guard try blobs.linkAsBlob(workingFile: inode, as: hash) else { return local }
    } catch {
      logger.warning(
        "cannot keep the content of \(path) before sync replaces it: \(error); it is fetched again when read"
      )
      return local
    }
    guard case .file(inode, size, mtime, let changed, executable)? = tree?.entry(at: path) else {
      return local
    }
    return .file(
      inode: inode, size: size, modificationTime: mtime, changeTime: changed,
      executable: executable)
  }
}
