import FileSystemConformance
import Foundation
import Testing

import enum MountHarness.ScratchFolder

/// The suite against a plain local folder: proves that the checks themselves agree with the
/// kernel's own file systems (ext4 or overlay under /var/tmp).
@Suite("conformance checks on a plain local folder")
struct PlainFolderTests {
  static let subject = PosixSubject(root: PlainFolder.root)

  /// Everything that a plain folder can satisfy; the rest is named by `excludedChecks`.
  @Test(arguments: ConformanceSuite.checks(for: subject.capabilities))
  func check(_ check: ConformanceCheck) throws {
    try ConformanceSuite.run(check, on: Self.subject)
  }

  /// A plain folder is not a docsync mount root; as root it has every other capability.
  @Test("only checks that need a docsync mount root (or root privileges) are excluded")
  func excludedChecks() {
    let excluded = ConformanceSuite.excludedChecks(for: Self.subject.capabilities)
    for check in excluded {
      print("excluded on a plain folder, requires \(check.requires): \(check.name)")
    }
    let allowed: SubjectCapabilities =
      geteuid() == 0
      ? [.docsyncRoot, .permissionChecks] : [.docsyncRoot, .deviceNodes, .changeOwner]
    #expect(excluded.allSatisfy { !$0.requires.intersection(allowed).isEmpty })
    #expect(!excluded.isEmpty)
  }

  @Test("check names are unique")
  func namesAreUnique() {
    let names = ConformanceSuite.checks.map(\.name)
    #expect(Set(names).count == names.count)
  }

  @Test("fsx keeps every byte, mmap included", arguments: [1 as UInt64, 0x5eed, 20_261_120])
  func fsx(seed: UInt64) throws {
    #expect(Self.subject.capabilities.contains(.mmap))
    let scratch = "fsx-\(seed)-\(UInt64.random(in: 0...UInt64.max))"
    try Self.subject.makeDirectory(scratch, mode: 0o755)
    defer { try? ConformanceSuite.removeTree(scratch, on: Self.subject) }
    try Fsx.run(
      subject: Self.subject, path: scratch + "/file", seed: seed, operations: 3_000,
      maxFileSize: 256 * 1024)
  }

  @Test("fsx reports the seed and operation of a failure")
  func fsxReportsFailures() throws {
    let failing = BrokenReads(base: Self.subject)
    let scratch = "fsx-broken-\(UInt64.random(in: 0...UInt64.max))"
    try Self.subject.makeDirectory(scratch, mode: 0o755)
    defer { try? ConformanceSuite.removeTree(scratch, on: Self.subject) }
    let error = #expect(throws: ConformanceFailure.self) {
      try Fsx.run(
        subject: failing, path: scratch + "/file", seed: 42, operations: 3_000,
        maxFileSize: 64 * 1024)
    }
    #expect(error?.message.contains("fsx seed 42, operation ") == true)
    #expect(error?.message.contains("last operations: ") == true)
    #expect(error?.message.contains("the model says") == true)
  }
}

extension ConformanceCheck: CustomTestStringConvertible {
  public var testDescription: String { description }
}

/// A scratch root on the real disk, not under /tmp (which may be a tmpfs).
enum PlainFolder {
  static let root = make()

  /// A new empty folder under /var/tmp.
  static func make() -> String { ScratchFolder.make("docsync-conformance") }
}

/// A subject whose reads flip one bit of any read longer than 1,000 bytes, to prove that fsx
/// notices.
struct BrokenReads: FileSystemSubject {
  let base: PosixSubject
  var capabilities: SubjectCapabilities { base.capabilities }
  var caller: Caller { base.caller }
  func read(_ file: OpenFile, at offset: Int64, count: Int) throws -> [UInt8] {
    var bytes = try base.read(file, at: offset, count: count)
    if bytes.count > 1000 { bytes[500] ^= 1 }
    return bytes
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
  func setMode(_ path: String, _ mode: UInt32) throws { try base.setMode(path, mode) }
  func setOwner(_ path: String, user: UInt32?, group: UInt32?) throws {
    try base.setOwner(path, user: user, group: group)
  }
  func setTimes(_ path: String, access: TimeUpdate, modification: TimeUpdate) throws {
    try base.setTimes(path, access: access, modification: modification)
  }
  func truncate(_ path: String, size: Int64) throws { try base.truncate(path, size: size) }
  func access(_ path: String, _ mode: AccessMode) throws { try base.access(path, mode) }
  func fileSystemStatus(_ path: String) throws -> FileSystemStatus {
    try base.fileSystemStatus(path)
  }
  func makeDirectory(_ path: String, mode: UInt32) throws {
    try base.makeDirectory(path, mode: mode)
  }
  func removeDirectory(_ path: String) throws { try base.removeDirectory(path) }
  func openDirectory(_ path: String) throws -> OpenDirectory { try base.openDirectory(path) }
  func readDirectory(_ directory: OpenDirectory, maximumCount: Int) throws -> [DirectoryEntry] {
    try base.readDirectory(directory, maximumCount: maximumCount)
  }
  func synchronize(_ directory: OpenDirectory) throws { try base.synchronize(directory) }
  func close(_ directory: OpenDirectory) throws { try base.close(directory) }
  func open(_ path: String, _ options: OpenOptions, mode: UInt32) throws -> OpenFile {
    try base.open(path, options, mode: mode)
  }
  func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws -> Int {
    try base.write(file, bytes, at: offset)
  }
  func truncate(_ file: OpenFile, size: Int64) throws { try base.truncate(file, size: size) }
  func synchronize(_ file: OpenFile, dataOnly: Bool) throws {
    try base.synchronize(file, dataOnly: dataOnly)
  }
  func close(_ file: OpenFile) throws { try base.close(file) }
  func removeFile(_ path: String) throws { try base.removeFile(path) }
  func rename(_ source: String, to destination: String, flags: RenameFlags) throws {
    try base.rename(source, to: destination, flags: flags)
  }
  func makeSymbolicLink(_ path: String, target: String) throws {
    try base.makeSymbolicLink(path, target: target)
  }
  func readSymbolicLink(_ path: String) throws -> String { try base.readSymbolicLink(path) }
  func makeHardLink(_ path: String, to existing: String) throws {
    try base.makeHardLink(path, to: existing)
  }
  func makeNode(_ path: String, kind: FileKind, mode: UInt32, device: UInt64) throws {
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
    try base.setExtendedAttribute(path, name: name, value: value, flags: flags)
  }
  func listExtendedAttributes(_ path: String) throws -> [String] {
    try base.listExtendedAttributes(path)
  }
  func removeExtendedAttribute(_ path: String, name: String) throws {
    try base.removeExtendedAttribute(path, name: name)
  }
  func mapRead(_ file: OpenFile, at offset: Int64, count: Int) throws -> [UInt8] {
    try base.mapRead(file, at: offset, count: count)
  }
  func mapWrite(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws {
    try base.mapWrite(file, bytes, at: offset)
  }
}
