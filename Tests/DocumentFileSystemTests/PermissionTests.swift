import DocumentFileSystem
import Glibc
import LocalStore
import SystemPackage
import Testing

/// The permission rules that docsync applies itself on an ordinary user's private mount, with
/// callers that a private mount never sees (other users, other groups, root) so that each rule
/// is exercised, not only the owner's path that the conformance suite covers.
@Suite struct PermissionTests {
  let alice = Caller(uid: 1000, gid: 1000)
  let bob = Caller(uid: 2000, gid: 2000)
  /// In alice's group, not alice.
  let carol = Caller(uid: 3000, gid: 1000)
  let superuser = Caller(uid: 0, gid: 0)
  let root = DocumentFileSystem.rootInode

  func fileSystem(checks: Bool = true) throws -> DocumentFileSystem {
    try DocumentFileSystem(
      store: LocalStore(directory: temporaryFolder()), owner: alice, creationMask: 0,
      checksPermissions: checks)
  }

  func makeFile(
    _ fs: DocumentFileSystem, in parent: UInt64, _ name: String, mode: UInt32, as caller: Caller
  ) throws -> UInt64 {
    let (attributes, file) = try fs.create(
      parent: parent, name: bytes(name), mode: mode, flags: O_WRONLY, caller: caller)
    fs.release(handle: file.handle)
    return UInt64(attributes.st_ino)
  }

  func expectRefused(
    _ expected: Errno, _ what: String, _ body: () throws -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    do {
      try body()
      Issue.record("\(what) succeeded", sourceLocation: sourceLocation)
    } catch {
      #expect(error as? Errno == expected, "\(what): \(error)", sourceLocation: sourceLocation)
    }
  }

  @Test func inAStickyFolderOnlyOwnersTakeNamesAway() throws {
    let fs = try fileSystem()
    let shared = UInt64(
      try fs.makeDirectory(parent: root, name: bytes("shared"), mode: 0o1777, caller: alice).st_ino)
    _ = try makeFile(fs, in: shared, "a", mode: 0o666, as: alice)
    _ = try makeFile(fs, in: shared, "b", mode: 0o666, as: bob)
    _ = try makeFile(fs, in: shared, "c", mode: 0o666, as: carol)
    expectRefused(.notPermitted, "bob unlinks alice's file") {
      try fs.unlink(parent: shared, name: bytes("a"), caller: bob)
    }
    expectRefused(.notPermitted, "bob renames alice's file") {
      try fs.rename(
        parent: shared, name: bytes("a"), newParent: shared, newName: bytes("x"), options: [],
        caller: bob)
    }
    expectRefused(.notPermitted, "bob renames his file over alice's") {
      try fs.rename(
        parent: shared, name: bytes("b"), newParent: shared, newName: bytes("a"), options: [],
        caller: bob)
    }
    try fs.rename(
      parent: shared, name: bytes("b"), newParent: shared, newName: bytes("b2"), options: [],
      caller: bob)
    try fs.unlink(parent: shared, name: bytes("b2"), caller: bob)
    // The folder's owner may take anyone's name away; so may root.
    try fs.unlink(parent: shared, name: bytes("c"), caller: alice)
    try fs.unlink(parent: shared, name: bytes("a"), caller: superuser)
  }

  @Test func theOwnersGroupsAndOthersBitsApplyInThatOrder() throws {
    let fs = try fileSystem()
    let file = try makeFile(fs, in: root, "f", mode: 0o640, as: alice)
    fs.release(handle: try fs.open(inode: file, flags: O_RDONLY, caller: carol).handle)
    expectRefused(.permissionDenied, "carol writes a file of mode 640") {
      _ = try fs.open(inode: file, flags: O_WRONLY, caller: carol)
    }
    expectRefused(.permissionDenied, "bob reads a file of mode 640") {
      _ = try fs.open(inode: file, flags: O_RDONLY, caller: bob)
    }
    _ = try fs.setAttributes(inode: file, update: AttributeUpdate(mode: 0o077), caller: alice)
    // The owner's own bits deny it, whatever its group's and the others' allow.
    expectRefused(.permissionDenied, "alice reads her file of mode 077") {
      _ = try fs.open(inode: file, flags: O_RDONLY, caller: alice)
    }
    fs.release(handle: try fs.open(inode: file, flags: O_RDWR, caller: carol).handle)
    fs.release(handle: try fs.open(inode: file, flags: O_RDWR, caller: superuser).handle)
    expectRefused(.permissionDenied, "access R_OK by alice") {
      try fs.access(inode: file, mask: R_OK, caller: alice)
    }
    // Root may do anything but execute a file with no execute bit.
    _ = try fs.setAttributes(inode: file, update: AttributeUpdate(mode: 0o666), caller: alice)
    expectRefused(.permissionDenied, "access X_OK by root") {
      try fs.access(inode: file, mask: X_OK, caller: superuser)
    }
  }

  @Test func onlyTheOwnerChangesModesOwnersAndGivenTimes() throws {
    let fs = try fileSystem()
    let file = try makeFile(fs, in: root, "f", mode: 0o666, as: alice)
    expectRefused(.notPermitted, "bob chmods alice's file") {
      _ = try fs.setAttributes(inode: file, update: AttributeUpdate(mode: 0o777), caller: bob)
    }
    expectRefused(.notPermitted, "alice gives her file to bob") {
      _ = try fs.setAttributes(inode: file, update: AttributeUpdate(uid: 2000), caller: alice)
    }
    expectRefused(.notPermitted, "alice gives her file to a group she is not in") {
      _ = try fs.setAttributes(inode: file, update: AttributeUpdate(gid: 2000), caller: alice)
    }
    expectRefused(.notPermitted, "bob sets a given time on alice's file") {
      _ = try fs.setAttributes(
        inode: file, update: AttributeUpdate(modificationTime: .nanoseconds(1)), caller: bob)
    }
    // Touching to now needs write permission only, which mode 666 gives bob.
    _ = try fs.setAttributes(
      inode: file, update: AttributeUpdate(accessTime: .now, modificationTime: .now), caller: bob)
    _ = try fs.setAttributes(inode: file, update: AttributeUpdate(size: 3), caller: bob)
    _ = try fs.setAttributes(inode: file, update: AttributeUpdate(mode: 0o644), caller: alice)
    expectRefused(.permissionDenied, "bob touches a file he may not write") {
      _ = try fs.setAttributes(
        inode: file, update: AttributeUpdate(modificationTime: .now), caller: bob)
    }
    expectRefused(.permissionDenied, "bob truncates a file he may not write") {
      _ = try fs.setAttributes(inode: file, update: AttributeUpdate(size: 0), caller: bob)
    }
    // Root gives it away; then alice, outside its new group, loses set-group-id on chmod.
    _ = try fs.setAttributes(inode: file, update: AttributeUpdate(gid: 5000), caller: superuser)
    let changed = try fs.setAttributes(
      inode: file, update: AttributeUpdate(mode: 0o2755), caller: alice)
    #expect(changed.st_mode & 0o7777 == 0o755)
    let kept = try fs.setAttributes(
      inode: file, update: AttributeUpdate(mode: 0o2755), caller: superuser)
    #expect(kept.st_mode & 0o7777 == 0o2755)
  }

  @Test func aTruncateThroughAReadOnlyHandleNeedsWritePermission() throws {
    let fs = try fileSystem()
    let file = try makeFile(fs, in: root, "f", mode: 0o444, as: alice)
    // open(O_RDONLY | O_TRUNC): the kernel sends the truncate through the new handle.
    let reader = try fs.open(inode: file, flags: O_RDONLY, caller: alice)
    defer { fs.release(handle: reader.handle) }
    expectRefused(.permissionDenied, "O_TRUNC on a file of mode 444") {
      _ = try fs.setAttributes(
        inode: file, update: AttributeUpdate(size: 0, handle: reader.handle), caller: alice)
    }
  }

  @Test func aFolderMovedElsewhereMustBeWritableAndExchangesCheckBothSides() throws {
    let fs = try fileSystem()
    let a = UInt64(
      try fs.makeDirectory(parent: root, name: bytes("a"), mode: 0o777, caller: alice).st_ino)
    let b = UInt64(
      try fs.makeDirectory(parent: root, name: bytes("b"), mode: 0o777, caller: alice).st_ino)
    _ = try fs.makeDirectory(parent: a, name: bytes("d"), mode: 0o555, caller: alice)
    _ = try fs.makeDirectory(parent: b, name: bytes("e"), mode: 0o755, caller: alice)
    expectRefused(.permissionDenied, "bob moves a folder of mode 555 to another folder") {
      try fs.rename(
        parent: a, name: bytes("d"), newParent: b, newName: bytes("d"), options: [], caller: bob)
    }
    expectRefused(.permissionDenied, "bob exchanges folders he may not write") {
      try fs.rename(
        parent: a, name: bytes("d"), newParent: b, newName: bytes("e"), options: .exchange,
        caller: bob)
    }
    try fs.rename(
      parent: a, name: bytes("d"), newParent: a, newName: bytes("d2"), options: [], caller: bob)
    // Its owner is refused too until it may write the folder, whose `..` changes.
    let moved = try fs.lookup(parent: a, name: bytes("d2"), caller: alice)
    expectRefused(.permissionDenied, "alice moves her folder of mode 555 to another folder") {
      try fs.rename(
        parent: a, name: bytes("d2"), newParent: b, newName: bytes("d"), options: [],
        caller: alice)
    }
    _ = try fs.setAttributes(
      inode: UInt64(moved.st_ino), update: AttributeUpdate(mode: 0o755), caller: alice)
    try fs.rename(
      parent: a, name: bytes("d2"), newParent: b, newName: bytes("d"), options: [], caller: alice)
  }

  @Test func searchPermissionGuardsLookupsAndUserAttributesFollowTheModes() throws {
    let fs = try fileSystem()
    let folder = UInt64(
      try fs.makeDirectory(parent: root, name: bytes("d"), mode: 0o700, caller: alice).st_ino)
    let file = try makeFile(fs, in: folder, "f", mode: 0o644, as: alice)
    expectRefused(.permissionDenied, "bob looks up a name in alice's folder of mode 700") {
      _ = try fs.lookup(parent: folder, name: bytes("f"), caller: bob)
    }
    expectRefused(.permissionDenied, "bob lists alice's folder of mode 700") {
      _ = try fs.openDirectory(inode: folder, caller: bob)
    }
    let value: [UInt8] = [1]
    try value.withUnsafeBytes { raw in
      try fs.setExtendedAttribute(
        inode: file, name: bytes("user.tag"), value: raw, flags: 0, caller: alice)
    }
    #expect(try fs.extendedAttribute(inode: file, name: bytes("user.tag"), caller: bob) == value)
    expectRefused(.permissionDenied, "bob sets a user attribute on a file he may not write") {
      try value.withUnsafeBytes { raw in
        try fs.setExtendedAttribute(
          inode: file, name: bytes("user.tag"), value: raw, flags: 0, caller: bob)
      }
    }
    expectRefused(.permissionDenied, "bob removes a user attribute") {
      try fs.removeExtendedAttribute(inode: file, name: bytes("user.tag"), caller: bob)
    }
  }

  /// Where the kernel checks modes (a mount shared with allow_other), docsync does not check
  /// them again: its view of the caller's groups is narrower than the kernel's.
  @Test func withoutChecksEveryCallerIsLetThrough() throws {
    let fs = try fileSystem(checks: false)
    let folder = UInt64(
      try fs.makeDirectory(parent: root, name: bytes("d"), mode: 0o700, caller: alice).st_ino)
    let file = try makeFile(fs, in: folder, "f", mode: 0o600, as: alice)
    _ = try fs.lookup(parent: folder, name: bytes("f"), caller: bob)
    fs.forget(inode: file, count: 1)
    fs.release(handle: try fs.open(inode: file, flags: O_RDWR, caller: bob).handle)
    try fs.unlink(parent: folder, name: bytes("f"), caller: bob)
  }

  /// The kernel sends one group with a request; the others come from /proc.
  @Test func supplementaryGroupsComeFromTheCallersProcess() {
    var groups = [gid_t](repeating: 0, count: 256)
    let count = getgroups(Int32(groups.count), &groups)
    let caller = Caller(uid: 4242, gid: 4242, pid: getpid())
    for group in groups.prefix(Int(max(count, 0))) {
      #expect(caller.isMember(of: group), "group \(group)")
    }
    #expect(caller.isMember(of: 4242))
    #expect(!caller.isMember(of: 4_000_000))
    #expect(!Caller(uid: 4242, gid: 4242, pid: 0).isMember(of: groups.first ?? 0))
  }
}
