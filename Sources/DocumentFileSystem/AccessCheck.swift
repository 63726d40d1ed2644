import Glibc

/// A local disk's permission rules, as Linux applies them without ACLs (generic_permission and
/// the checks of namei.c and attr.c around it), for mounts where the kernel leaves them to docsync.
///
/// Pure: every function decides from modes, owners and the caller alone.
enum AccessCheck {
  static let read: UInt32 = 4
  static let write: UInt32 = 2
  /// Execute for a file, search for a folder.
  static let execute: UInt32 = 1

  /// Whether `caller` may `wanted` (read, write and execute bits) a node of `mode`, owned by
  /// `uid` and `gid`. uid 0 passes everything but executing a file that has no execute bit
  /// (CAP_DAC_OVERRIDE); everyone else gets the owner's, the group's or the others' bits, the
  /// first that applies, so an owner denied by its own bits stays denied.
  static func allows(_ wanted: UInt32, mode: UInt32, uid: UInt32, gid: UInt32, caller: Caller)
    -> Bool
  {
    if caller.uid == 0 {
      return wanted & execute == 0 || mode & UInt32(S_IFMT) == UInt32(S_IFDIR) || mode & 0o111 != 0
    }
    let granted: UInt32
    if caller.uid == uid {
      granted = (mode >> 6) & 7
    } else if caller.isMember(of: gid) {
      granted = (mode >> 3) & 7
    } else {
      granted = mode & 7
    }
    return wanted & 7 & ~granted == 0
  }

  /// Whether `caller` counts as the owner of a node owned by `uid`: what chmod, setting times
  /// and POSIX ACLs ask for (CAP_FOWNER for uid 0).
  static func owns(_ uid: UInt32, caller: Caller) -> Bool {
    caller.uid == 0 || caller.uid == uid
  }

  /// In a folder with the sticky bit, only the owner of a name's node, the owner of the folder
  /// and uid 0 may remove or replace the name (may_delete's check_sticky); EPERM otherwise.
  static func mayRemove(
    childUID: UInt32, folderMode: UInt32, folderUID: UInt32, caller: Caller
  ) -> Bool {
    folderMode & UInt32(S_ISVTX) == 0 || owns(childUID, caller: caller)
      || caller.uid == folderUID
  }

  /// The mode a chmod stores: a caller outside the node's group loses the set-group-id bit,
  /// as setattr_prepare decides.
  static func modeAfterChange(_ mode: UInt32, gid: UInt32, caller: Caller) -> UInt32 {
    if mode & UInt32(S_ISGID) == 0 || caller.uid == 0 || caller.isMember(of: gid) { return mode }
    return mode & ~UInt32(S_ISGID)
  }

  /// What a chown or chgrp by `caller` may do: uid 0 anything; the owner may give the node to a
  /// group of its own and keep its owner; nobody else anything (EPERM).
  static func mayChangeOwner(
    from uid: UInt32, gid: UInt32, to newUID: UInt32?, newGID: UInt32?, caller: Caller
  ) -> Bool {
    if caller.uid == 0 { return true }
    if let newUID, newUID != uid { return false }
    if let newGID, newGID != gid {
      return caller.uid == uid && caller.isMember(of: newGID)
    }
    // chown to the same ids: allowed to the owner only, as chown_ok and chgrp_ok decide.
    return newUID == nil && newGID == nil || caller.uid == uid
  }
}
