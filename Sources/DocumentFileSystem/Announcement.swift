import DocumentModel

/// A change that sync made in the tree, to be raised again through the mount so that programs
/// watching the file or its folder (inotify, GIO) hear it as they would hear a local program.
///
/// Each names the folder that holds the entry (its inode, and its path when the change was
/// made: a folder removed in the same sync is still reachable through the kernel's names).
public struct Announcement: Sendable, Equatable {
  public enum Kind: Sendable, Equatable {
    /// A new name: IN_CREATE, raised by a create, mkdir or symlink that the file system
    /// answers with the node it has already made.
    case created(EntryKind)
    /// A name that is gone: IN_DELETE (and IN_DELETE_SELF), raised by an unlink or rmdir that
    /// the file system answers without doing anything.
    case removed(EntryKind)
    /// New content of a file that kept its inode: IN_MODIFY and IN_CLOSE_WRITE, raised by an
    /// open for writing and a truncate to the size it has.
    case contentChanged
    /// New mode bits: IN_ATTRIB, raised by a chmod to the mode it has.
    case modeChanged(UInt32)
  }

  /// What a created or removed name holds, which decides the call that raises it.
  public enum EntryKind: Sendable, Equatable {
    case file, directory, symlink
  }

  public var kind: Kind
  public var parent: UInt64
  public var parentPath: DocumentPath
  public var name: [UInt8]
  public var inode: UInt64

  public init(
    _ kind: Kind, parent: UInt64, parentPath: DocumentPath, name: [UInt8], inode: UInt64
  ) {
    self.kind = kind
    self.parent = parent
    self.parentPath = parentPath
    self.name = name
    self.inode = inode
  }
}
