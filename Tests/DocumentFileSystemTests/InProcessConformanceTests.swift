import FileSystemConformance
import Testing

/// The conformance suite in process against `DocumentFileSystem`, with no kernel in between.
@Suite("conformance checks in process against DocumentFileSystem")
struct InProcessConformanceTests {
  static let subject = freshSubject()

  static func freshSubject(unprivileged: (uid: UInt32, gid: UInt32)? = nil) -> InProcessSubject {
    do {
      return try InProcessSubject(stateFolder: temporaryFolder(), unprivileged: unprivileged)
    } catch {
      fatalError("cannot open a fresh DocumentFileSystem: \(error)")
    }
  }

  @Test(arguments: ConformanceSuite.checks(for: subject.capabilities))
  func check(_ check: ConformanceCheck) throws {
    try ConformanceSuite.run(check, on: Self.subject)
  }

  /// Checks that need a kernel (mmap, locks) run through a real mount in MountTests; those of
  /// an ordinary user's permissions run against `unprivileged`.
  @Test func onlyKernelChecksAreLeftOut() {
    let excluded = ConformanceSuite.excludedChecks(for: Self.subject.capabilities)
    #expect(
      excluded.allSatisfy { !$0.requires.intersection([.mmap, .locks, .permissionChecks]).isEmpty })
  }

  /// The same file system as an ordinary user's private mount serves it: the caller is not
  /// root and owns the root folder, and docsync checks its permissions itself.
  static let unprivileged = freshSubject(unprivileged: (4321, 4321))

  @Test(arguments: ConformanceSuite.checks(for: unprivileged.capabilities))
  func checkAsAnOrdinaryUser(_ check: ConformanceCheck) throws {
    try ConformanceSuite.run(check, on: Self.unprivileged)
  }

  @Test func everyPermissionCheckRunsAsAnOrdinaryUser() {
    let checks = ConformanceSuite.checks(for: Self.unprivileged.capabilities)
    #expect(checks.filter { $0.group == "permissions" }.count >= 7)
    let excluded = ConformanceSuite.excludedChecks(for: Self.unprivileged.capabilities)
    let privileged: SubjectCapabilities = [.mmap, .locks, .deviceNodes, .changeOwner]
    #expect(excluded.allSatisfy { !$0.requires.intersection(privileged).isEmpty })
  }

  @Test("fsx keeps every byte in process", arguments: [7 as UInt64, 0xD0C5, 424_242])
  func fsx(seed: UInt64) throws {
    let scratch = "fsx-\(seed)"
    try Self.subject.makeDirectory(scratch, mode: 0o755)
    defer { try? ConformanceSuite.removeTree(scratch, on: Self.subject) }
    try Fsx.run(
      subject: Self.subject, path: scratch + "/file", seed: seed, operations: 3_000,
      maxFileSize: 256 * 1024)
  }
}
