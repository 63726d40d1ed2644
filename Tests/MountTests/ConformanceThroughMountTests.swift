import FileSystemConformance
import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The same conformance suite that runs in process against DocumentFileSystem, here through
/// the kernel on a real mount of the built binary: locks and mmap included.
///
/// Tools/test runs it as an ordinary user, so every read and write is a request to the daemon
/// and the kernel checks permissions as it does for people; `PassthroughAsRootTests` runs it
/// again as root, where the kernel reads and writes working files itself.
@Suite("conformance checks through a real docsync mount")
struct ConformanceThroughMountTests {
  @Test(.needs())
  func everyCheckPassesThroughTheKernel() throws {
    try Self.everyCheckPasses(options: [])
  }

  @Test(.needs())
  func fsxKeepsEveryByteThroughTheKernelWithMmap() throws {
    try Self.fsxKeepsEveryByte(options: [])
  }

  /// Only what needs root's privileges (device nodes, chown) is left out for an ordinary user.
  /// `afterwards` runs on the fixture once every check ran, still mounted.
  static func everyCheckPasses(
    options: [String], afterwards: (MountFixture) throws -> Void = { _ in }
  ) throws {
    try MountFixture.withMount(options: options) { m throws in
      // The mount is nodev (libfuse's default for FUSE), so device nodes can be made but not
      // opened; making them is all the check does, so the capability stays.
      let subject = PosixSubject(
        root: m.mountPoint, capabilities: PosixSubject.defaultCapabilities.union(.docsyncRoot))
      let checks = ConformanceSuite.checks(for: subject.capabilities)
      // Root lacks what only root may do as an ordinary user lacks what binds only them.
      let leftOut: SubjectCapabilities =
        TestEnvironment.isRoot ? .permissionChecks : [.deviceNodes, .changeOwner]
      let excluded = ConformanceSuite.excludedChecks(for: subject.capabilities)
      #expect(
        excluded.allSatisfy { !$0.requires.intersection(leftOut).isEmpty },
        "left out of a mount: \(excluded.map(\.name))")
      if !TestEnvironment.isRoot {
        #expect(checks.contains { $0.group == "permissions" }, "permission checks as a user")
      }
      var failures: [String] = []
      for check in checks {
        do {
          try ConformanceSuite.run(check, on: subject)
        } catch {
          failures.append("\(check): \(error)")
          Issue.record("\(check) failed through the mount (uid \(geteuid())): \(error)")
        }
      }
      #expect(failures.isEmpty, "\(failures.count) of \(checks.count) checks failed")
      try afterwards(m)
    }
  }

  /// `afterwards` runs on the fixture once fsx is done, still mounted.
  static func fsxKeepsEveryByte(
    options: [String], afterwards: (MountFixture) throws -> Void = { _ in }
  ) throws {
    try MountFixture.withMount(options: options) { m throws in
      let subject = PosixSubject(root: m.mountPoint)
      #expect(subject.capabilities.contains(.mmap))
      for seed in [11 as UInt64, 0xF5, 20_261_121] {
        let folder = "fsx-\(seed)"
        try subject.makeDirectory(folder, mode: 0o755)
        try Fsx.run(
          subject: subject, path: folder + "/file", seed: seed, operations: 3_000,
          maxFileSize: 256 * 1024)
      }
      try afterwards(m)
    }
  }
}
