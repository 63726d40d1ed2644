/// One file, folder or symlink of a package version, as its ``PackageManifest`` lists it.
///
/// The path is relative to the package's folder. A file names its content as a version record
/// does: the SHA-256 of its bytes (``ContentHash``, how blobs are addressed) and, when it was
/// cut into chunks, the root of its chunk tree (``ContentRoot``). A symlink carries its target
/// itself (at most 4095 bytes), so a package's links need no content of their own. A folder
/// has neither time nor content: its time changes with every name made or removed in it, and
/// no program that keeps a package reads it.
public struct PackageEntry: Hashable, Sendable {
  /// What the entry holds.
  public enum Content: Hashable, Sendable {
    case file(hash: ContentHash, size: UInt64, chunks: ContentRoot?)
    case folder
    case symlink(target: [UInt8])
  }

  /// The permission bits that sync for entries of a package: read, write and execute for
  /// owner, group and others. Set-ID and sticky bits stay on the device, as for documents.
  public static let syncedModeBits: UInt16 = 0o777

  /// The path inside the package (never empty).
  public let path: DocumentPath
  public let content: Content
  /// Permission bits (``syncedModeBits``); 0o777 for a symlink, whose mode means nothing.
  public let mode: UInt16
  /// The modification time in nanoseconds since the epoch; nil for a folder.
  public let modified: Int64?

  init(path: DocumentPath, content: Content, mode: UInt16, modified: Int64?) {
    self.path = path
    self.content = content
    self.mode = mode
    self.modified = modified
  }

  /// A regular file; bits of `mode` beyond ``syncedModeBits`` are dropped.
  public static func file(
    _ path: DocumentPath, hash: ContentHash, size: UInt64, chunks: ContentRoot? = nil,
    mode: UInt16, modified: Int64
  ) -> PackageEntry {
    PackageEntry(
      path: path, content: .file(hash: hash, size: size, chunks: chunks),
      mode: mode & syncedModeBits, modified: modified)
  }

  /// A folder; bits of `mode` beyond ``syncedModeBits`` are dropped.
  public static func folder(_ path: DocumentPath, mode: UInt16) -> PackageEntry {
    PackageEntry(path: path, content: .folder, mode: mode & syncedModeBits, modified: nil)
  }

  /// A symbolic link to `target`.
  public static func symlink(_ path: DocumentPath, target: [UInt8], modified: Int64)
    -> PackageEntry
  {
    PackageEntry(
      path: path, content: .symlink(target: target), mode: syncedModeBits, modified: modified)
  }

  /// File, directory or symlink, numbered as version records number them.
  public var kind: VersionKind {
    switch content {
    case .file: .file
    case .folder: .directory
    case .symlink: .symlink
    }
  }

  /// A file's size, a symlink's target length, 0 for a folder.
  public var size: UInt64 {
    switch content {
    case .file(_, let size, _): size
    case .folder: 0
    case .symlink(let target): UInt64(target.count)
    }
  }

  /// The file's content hash; nil for folders and symlinks.
  public var fileHash: ContentHash? {
    if case .file(let hash, _, _) = content { return hash }
    return nil
  }

  /// Whether `other` holds the same bytes with the same mode (a chunk tree named on one side
  /// only, or a different time, still counts as the same).
  public func holdsTheSame(as other: PackageEntry) -> Bool {
    guard mode == other.mode else { return false }
    switch (content, other.content) {
    case (.file(let a, let sizeA, _), .file(let b, let sizeB, _)): return a == b && sizeA == sizeB
    case (.folder, .folder): return true
    case (.symlink(let a), .symlink(let b)): return a == b
    default: return false
    }
  }

  /// Why this entry cannot be part of a manifest, or nil.
  func problem() -> String? {
    if path.isRoot { return "an entry for the package's own folder" }
    if let problem = RecordCheck.problem(with: path), problem != .reservedPath {
      return problem.description
    }
    if mode & ~Self.syncedModeBits != 0 { return "mode \(String(mode, radix: 8))" }
    switch content {
    case .file(_, let size, let chunks):
      if size > RecordCheck.maximumFileSize { return "a file of \(size) bytes" }
      if let chunks,
        chunks.size != size || chunks.height > ContentRoot.maximumHeight
          || (chunks.height > 0 && size == 0)
      {
        return "a chunk tree that does not fit its file"
      }
      if modified == nil { return "a file without a time" }
    case .folder:
      if modified != nil { return "a folder with a time" }
    case .symlink(let target):
      if target.isEmpty || target.contains(0) || target.count > RecordCheck.maximumPathBytes {
        return "a symlink target that no link can hold"
      }
      if mode != Self.syncedModeBits { return "a symlink with mode \(String(mode, radix: 8))" }
      if modified == nil { return "a symlink without a time" }
    }
    return nil
  }
}
