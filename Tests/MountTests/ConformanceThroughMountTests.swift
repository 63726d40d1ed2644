import FileSystemConformance
import Foundation
import MountHarness
import Testing

/// The same conformance suite that runs in process against DocumentFileSystem, here through
/// the kernel on a real mount of the built binary: locks and mmap included.
@Suite("conformance checks through a real docsync mount")
struct ConformanceThroughMountTests {
  /// With the kernel reading and writing working files itself (FUSE passthrough, as root), and
  /// with every read and write as a request (as for a user without CAP_SYS_ADMIN).
  static let modes: [[String]] = [[], ["--no-passthrough"]]

  @Test(.needs(), arguments: modes)
  func everyCheckPassesThroughTheKernel(options: [String]) throws {
    try MountFixture.withMount(options: options) { m throws in
      // The mount is nodev (libfuse's default for FUSE), so device nodes can be made but not
      // opened; making them is all the check does, so the capability stays.
      let subject = PosixSubject(
        root: m.mountPoint, capabilities: PosixSubject.defaultCapabilities.union(.docsyncRoot))
      let checks = ConformanceSuite.checks(for: subject.capabilities)
      #expect(checks.count == ConformanceSuite.checks.count, "no check is left out of a mount")
      var failures: [String] = []
      for check in checks {
        do {
          try ConformanceSuite.run(check, on: subject)
        } catch {
          failures.append("\(check): \(error)")
          Issue.record("\(check) failed through the mount: \(error)")
        }
      }
      #expect(failures.isEmpty, "\(failures.count) of \(checks.count) checks failed")
    }
  }

  @Test(.needs(), arguments: modes)
  func fsxKeepsEveryByteThroughTheKernelWithMmap(options: [String]) throws {
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
    }
  }
}
