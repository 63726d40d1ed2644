import FileSystemConformance
import Foundation
import SystemPackage
import Testing

/// The `.docsyncRoot` checks against a plain folder that plays docsync's part for
/// `.versions` (a directory at the root that only its owner may write, and refuses changes): proves that those checks pass on a
/// subject that behaves as DESIGN.md §1 says, and fail on one that does not.
@Suite("docsync root checks on a stand-in for docsync's .versions")
struct ReservedVersionsTests {
  static let subject: ReservedVersions = {
    let root = PlainFolder.make()
    let base = PosixSubject(root: root)
    try! base.makeDirectory(".versions", mode: 0o755)
    return ReservedVersions(base: base)
  }()

  @Test(arguments: ConformanceSuite.checks.filter { $0.requires.contains(.docsyncRoot) })
  func check(_ check: ConformanceCheck) throws {
    try ConformanceSuite.run(check, on: Self.subject)
  }

  @Test("the .versions checks fail on a plain folder whose .versions anyone may write")
  func plainVersionsFolderFails() throws {
    let root = PlainFolder.make()
    let plain = PosixSubject(
      root: root, capabilities: PosixSubject.defaultCapabilities.union(.docsyncRoot))
    try plain.makeDirectory(".versions", mode: 0o777)
    try plain.setMode(".versions", 0o777)  // past the umask
    // Creating over an existing `.versions` gives EEXIST on any file system: through a mount
    // the kernel answers it from lookup alone, so that check cannot tell the two apart.
    let telling = ConformanceSuite.checks.filter {
      $0.requires.contains(.docsyncRoot) && !$0.name.hasPrefix("creating .versions at the root")
    }
    #expect(telling.count == 5)
    for check in telling {
      #expect(throws: ConformanceFailure.self, "\(check.name)") {
        try ConformanceSuite.run(check, on: plain)
      }
    }
  }
}

/// PosixSubject with `.versions` at the root refused for every change, as docsync does.
struct ReservedVersions: FileSystemSubject {
  let base: PosixSubject
  var capabilities: SubjectCapabilities { base.capabilities.union(.docsyncRoot) }
  var caller: Caller { base.caller }

  /// Refuses a change to `path` when it is `.versions` (EPERM) or inside it (EROFS).
  func guardChange(_ path: String) throws {
    let first = path.utf8.split(separator: UInt8(ascii: "/")).first.map(Array.init)
    guard first == Array(".versions".utf8) else { return }
    let components = path.utf8.split(separator: UInt8(ascii: "/")).count
    throw components == 1 ? Errno.notPermitted : Errno.readOnlyFileSystem
  }

  func status(_ path: String, followSymlinks: Bool) throws -> FileStatus {
    try base.status(path, followSymlinks: followSymlinks)
  }
  func status(of file: OpenFile) throws -> FileStatus { try base.status(of: file) }
  func status(of directory: OpenDirectory) throws -> FileStatus {
    try base.status(of: directory)
  }
  func allocate(_ file: OpenFile, mode: Int32, offset: Int64, length: Int64) throws {
    try base.allocate(file, mode: mode, offset: offset, length: length)
  }
  func setMode(_ path: String, _ mode: UInt32) throws {
    try guardChange(path)
    try base.setMode(path, mode)
  }
  func setOwner(_ path: String, user: UInt32?, group: UInt32?) throws {
    try guardChange(path)
    try base.setOwner(path, user: user, group: group)
  }
  func setTimes(_ path: String, access: TimeUpdate, modification: TimeUpdate) throws {
    try guardChange(path)
    try base.setTimes(path, access: access, modification: modification)
  }
  func truncate(_ path: String, size: Int64) throws {
    try guardChange(path)
    try base.truncate(path, size: size)
  }
  func access(_ path: String, _ mode: AccessMode) throws { try base.access(path, mode) }
  func fileSystemStatus(_ path: String) throws -> FileSystemStatus {
    try base.fileSystemStatus(path)
  }
  func makeDirectory(_ path: String, mode: UInt32) throws {
    try guardChange(path)
    try base.makeDirectory(path, mode: mode)
  }
  func removeDirectory(_ path: String) throws {
    try guardChange(path)
    try base.removeDirectory(path)
  }
  func openDirectory(_ path: String) throws -> OpenDirectory { try base.openDirectory(path) }
  func readDirectory(_ directory: OpenDirectory, maximumCount: Int) throws -> [DirectoryEntry] {
    try base.readDirectory(directory, maximumCount: maximumCount)
  }
  func synchronize(_ directory: OpenDirectory) throws { try base.synchronize(directory) }
  func close(_ directory: OpenDirectory) throws { try base.close(directory) }
  func open(_ path: String, _ options: OpenOptions, mode: UInt32) throws -> OpenFile {
    if !options.isDisjoint(with: [.write, .create, .truncate, .append]) { try guardChange(path) }
    return try base.open(path, options, mode: mode)
  }
  func read(_ file: OpenFile, at offset: Int64, count: Int) throws -> [UInt8] {
    try base.read(file, at: offset, count: count)
  }
  func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws -> Int {
    try base.write(file, bytes, at: offset)
  }
  func truncate(_ file: OpenFile, size: Int64) throws { try base.truncate(file, size: size) }
  func synchronize(_ file: OpenFile, dataOnly: Bool) throws {
    try base.synchronize(file, dataOnly: dataOnly)
  }
  func close(_ file: OpenFile) throws { try base.close(file) }
  func removeFile(_ path: String) throws {
    try guardChange(path)
    try base.removeFile(path)
  }
  func rename(_ source: String, to destination: String, flags: RenameFlags) throws {
    try guardChange(source)
    do {
      try guardChange(destination)
    } catch Errno.readOnlyFileSystem {
      throw Errno.improperLink  // into .versions: another file system as far as mv knows
    }
    try base.rename(source, to: destination, flags: flags)
  }
  func makeSymbolicLink(_ path: String, target: String) throws {
    try guardChange(path)
    try base.makeSymbolicLink(path, target: target)
  }
  func readSymbolicLink(_ path: String) throws -> String { try base.readSymbolicLink(path) }
  func makeHardLink(_ path: String, to existing: String) throws {
    try guardChange(path)
    try base.makeHardLink(path, to: existing)
  }
  func makeNode(_ path: String, kind: FileKind, mode: UInt32, device: UInt64) throws {
    try guardChange(path)
    try base.makeNode(path, kind: kind, mode: mode, device: device)
  }
  func extendedAttributeSize(_ path: String, name: String) throws -> Int {
    try base.extendedAttributeSize(path, name: name)
  }
  func getExtendedAttribute(_ path: String, name: String, capacity: Int) throws -> [UInt8] {
    try base.getExtendedAttribute(path, name: name, capacity: capacity)
  }
  func setExtendedAttribute(
    _ path: String, name: String, value: [UInt8], flags: ExtendedAttributeFlags
  ) throws {
    try guardChange(path)
    try base.setExtendedAttribute(path, name: name, value: value, flags: flags)
  }
  func listExtendedAttributes(_ path: String) throws -> [String] {
    try base.listExtendedAttributes(path)
  }
  func removeExtendedAttribute(_ path: String, name: String) throws {
    try guardChange(path)
    try base.removeExtendedAttribute(path, name: name)
  }
}
