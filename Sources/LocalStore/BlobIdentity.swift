import Glibc

/// What identifies one state of a blob file: a blob checked in that state need not be again.
public struct BlobIdentity: Equatable, Sendable {
  public var inode: UInt
  public var size: Int
  public var modificationTime: timespec
  public var changeTime: timespec

  public init(_ info: stat) {
    inode = info.st_ino
    size = info.st_size
    modificationTime = info.st_mtim
    changeTime = info.st_ctim
  }

  public static func == (lhs: BlobIdentity, rhs: BlobIdentity) -> Bool {
    lhs.inode == rhs.inode && lhs.size == rhs.size
      && lhs.modificationTime.tv_sec == rhs.modificationTime.tv_sec
      && lhs.modificationTime.tv_nsec == rhs.modificationTime.tv_nsec
      && lhs.changeTime.tv_sec == rhs.changeTime.tv_sec
      && lhs.changeTime.tv_nsec == rhs.changeTime.tv_nsec
  }
}
