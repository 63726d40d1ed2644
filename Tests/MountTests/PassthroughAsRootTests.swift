import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What only root's mounts do: root may register backing files (FUSE passthrough), so the
/// kernel reads and writes working files itself. Tools/test runs the `AsRootTests` suites as
/// root, and every other mount test as an ordinary user, whose mounts have no passthrough.
@Suite("FUSE passthrough, as root", .docsyncOnly, .asRoot)
struct PassthroughAsRootTests {
  /// libfuse's request log shows no READ or WRITE for a regular file, and the bytes still
  /// arrive, also for a second open of the file while the first is still open.
  @Test(.needs())
  func readsAndWritesPassThroughTheDaemon() throws {
    try #require(TestEnvironment.isRoot, "passthrough needs root")
    try MountFixture.withMount(options: ["--fuse-debug"]) { m throws in
      let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
      try Data(bytes).write(to: URL(fileURLWithPath: m.path("large.bin")))
      let first = open(m.path("large.bin"), O_RDONLY)
      try #require(first >= 0)
      defer { close(first) }
      #expect(try Data(contentsOf: URL(fileURLWithPath: m.path("large.bin"))) == Data(bytes))
      var head = [UInt8](repeating: 0, count: 16)
      #expect(pread(first, &head, head.count, 0) == 16 && head == Array(bytes.prefix(16)))
      let log = try String(contentsOfFile: "\(m.state)/docsync.log", encoding: .utf8)
      #expect(log.contains("opcode: CREATE"), "the log has libfuse's requests")
      #expect(!log.contains("opcode: WRITE"), "a write reached the daemon")
      #expect(!log.contains("opcode: READ "), "a read reached the daemon")
    }
  }

  /// The conformance suite and fsx with the kernel reading and writing working files itself.
  @Test(.needs())
  func everyCheckPassesWithPassthrough() throws {
    try #require(TestEnvironment.isRoot, "passthrough needs root")
    try ConformanceThroughMountTests.everyCheckPasses(options: [])
  }

  @Test(.needs())
  func fsxKeepsEveryByteWithPassthrough() throws {
    try #require(TestEnvironment.isRoot, "passthrough needs root")
    try ConformanceThroughMountTests.fsxKeepsEveryByte(options: [])
  }
}
