import Foundation
import GRDB

/// Which chunks of each partial working file are here (files on demand): a row per inode with
/// the content it is becoming (its hash and encoded chunk root), the encoded presence map, and
/// the identity of the file when the map was committed.
extension LocalStore {
  /// Records what the partial working file of `inode` holds, after
  /// ``ContentStore/settlePartialWorkingFile(_:time:)`` returned `identity`.
  public func storePresence(
    inode: UInt64, hash: [UInt8], root: [UInt8], presence: [UInt8], identity: BlobIdentity
  ) throws(LocalStoreError) {
    do {
      try database.write { db in
        try db.cachedStatement(
          sql: """
            INSERT OR REPLACE INTO partial_content
              (ino, hash, root, presence, size, file_ino, mtime_ns, ctime_ns)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).execute(arguments: [
          Int64(bitPattern: inode), Data(hash), Data(root), Data(presence),
          Int64(identity.size), Int64(bitPattern: UInt64(identity.inode)),
          Self.nanoseconds(identity.modificationTime), Self.nanoseconds(identity.changeTime),
        ])
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  /// What the partial working file of `inode` holds, when it is still in the state its row was
  /// committed with; nil when there is no row, or the file changed since (a crash between a
  /// write and its commit, a hand): then none of its bytes are trusted.
  public func presence(inode: UInt64, identity: BlobIdentity) throws(LocalStoreError) -> (
    hash: [UInt8], root: [UInt8], presence: [UInt8]
  )? {
    try reading { db in
      guard
        let row = try Row.fetchOne(
          db.cachedStatement(sql: "SELECT * FROM partial_content WHERE ino = ?"),
          arguments: [Int64(bitPattern: inode)])
      else { return nil }
      let matches =
        row["size"] as Int64 == Int64(identity.size)
        && row["file_ino"] as Int64 == Int64(bitPattern: UInt64(identity.inode))
        && row["mtime_ns"] as Int64 == Self.nanoseconds(identity.modificationTime)
        && row["ctime_ns"] as Int64 == Self.nanoseconds(identity.changeTime)
      guard matches else { return nil }
      return (
        [UInt8](row["hash"] as Data), [UInt8](row["root"] as Data),
        [UInt8](row["presence"] as Data)
      )
    }
  }

  /// Forgets the presence of `inode`: its file is whole now, or gone.
  public func removePresence(inode: UInt64) throws(LocalStoreError) {
    do {
      try database.write { db in
        try db.cachedStatement(sql: "DELETE FROM partial_content WHERE ino = ?")
          .execute(arguments: [Int64(bitPattern: inode)])
      }
    } catch {
      throw LocalStoreError(error)
    }
  }

  static func nanoseconds(_ time: timespec) -> Int64 {
    Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec)
  }
}
