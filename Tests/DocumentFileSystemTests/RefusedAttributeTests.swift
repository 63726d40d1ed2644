import DocumentFileSystem
import Glibc
import LocalStore
import SystemPackage
import Testing

/// POSIX ACLs and `trusted.*` attributes are refused on purpose (an ACL names local users and
/// groups; trusted.* serves local subsystems that need more than attributes): EOPNOTSUPP, and
/// nothing is kept or listed. The reasons are in the docs; the refusal is tested here.
@Suite struct RefusedAttributeTests {
  let folder = temporaryFolder()
  let root = Caller(uid: 0, gid: 0)

  @Test func aclsAndTrustedAttributesAreRefusedAndNotKept() throws {
    let fs = try DocumentFileSystem(store: LocalStore(directory: folder), owner: root)
    defer { fs.shutdown() }
    let (attributes, file) = try fs.create(
      parent: DocumentFileSystem.rootInode, name: Array("f".utf8), mode: 0o644, flags: O_WRONLY,
      caller: root)
    fs.release(handle: file.handle)
    let inode = UInt64(attributes.st_ino)
    // version 2; USER_OBJ rw-, GROUP_OBJ r--, OTHER r-- (acl_ea_header, acl_ea_entry).
    let acl: [UInt8] = [
      2, 0, 0, 0, 1, 0, 6, 0, 255, 255, 255, 255, 4, 0, 4, 0, 255, 255, 255, 255, 32, 0, 4, 0,
      255, 255, 255, 255,
    ]
    for name in ["system.posix_acl_access", "system.posix_acl_default", "trusted.overlay.opaque"] {
      #expect(throws: Errno.notSupported) {
        try acl.withUnsafeBytes { value in
          try fs.setExtendedAttribute(
            inode: inode, name: Array(name.utf8), value: value, flags: 0, caller: root)
        }
      }
      #expect(throws: Errno.noData) {
        _ = try fs.extendedAttribute(inode: inode, name: Array(name.utf8), caller: root)
      }
    }
    #expect(try fs.extendedAttributeNames(inode: inode).isEmpty)
  }
}
