import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// FUSE over io_uring: with the fuse module's `enable_uring` on, docsync registers one queue per
/// CPU and serves requests from the rings. Only root may turn the parameter on, so the suite
/// runs as root, turns it on for each test and puts back what it found; serialized, so that no
/// test's restore turns it off under another's mount.
@Suite("FUSE over io_uring, as root", .docsyncOnly, .asRoot, .serialized)
struct IoUringAsRootTests {
  static let parameter = "/sys/module/fuse/parameters/enable_uring"

  /// Runs `body` with `enable_uring` on, and restores the value it had.
  static func withRingsEnabled<R>(_ body: () throws -> R) throws -> R {
    let before = try String(contentsOfFile: parameter, encoding: .utf8)
      .trimmingCharacters(in: .whitespacesAndNewlines)
    try "Y".write(toFile: parameter, atomically: false, encoding: .utf8)
    defer { try? before.write(toFile: parameter, atomically: false, encoding: .utf8) }
    return try body()
  }

  /// How many requests the daemon says it served from the rings: its last log line about
  /// them, written when the session ends; nil when it wrote none.
  static func requestsServedFromRings(_ m: MountFixture) throws -> Int? {
    try m.unmount()
    let log = try String(contentsOfFile: "\(m.state)/docsync.log", encoding: .utf8)
    #expect(!log.contains("io_uring unavailable"), "registration failed:\n\(m.logTail())")
    guard let line = log.split(separator: "\n").last(where: { $0.contains("io_uring served") })
    else { return nil }
    let words = line.split(separator: " ")
    guard let index = words.firstIndex(of: "served"), index + 1 < words.count else { return nil }
    return Int(words[index + 1])
  }

  /// Requests really go through the rings (the daemon counts them), the bytes arrive, and with
  /// root's FUSE passthrough reads and writes still never reach the daemon.
  @Test(.needs())
  func requestsGoThroughTheRings() throws {
    try #require(TestEnvironment.isRoot, "enable_uring needs root")
    try Self.withRingsEnabled {
      try MountFixture.withMount(options: ["--fuse-debug"]) { m throws in
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try Data(bytes).write(to: URL(fileURLWithPath: m.path("large.bin")))
        #expect(try Data(contentsOf: URL(fileURLWithPath: m.path("large.bin"))) == Data(bytes))
        try FileManager.default.createDirectory(
          atPath: m.path("folder"), withIntermediateDirectories: false)
        for index in 0..<200 {
          try Data("note \(index)\n".utf8).write(
            to: URL(fileURLWithPath: m.path("folder/\(index).md")))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: m.path("folder"))
        #expect(names.count == 200)
        #expect(rename(m.path("folder/0.md"), m.path("renamed.md")) == 0)
        #expect(try String(contentsOfFile: m.path("renamed.md"), encoding: .utf8) == "note 0\n")
        let log = try String(contentsOfFile: "\(m.state)/docsync.log", encoding: .utf8)
        #expect(log.contains("opcode: CREATE"), "the log has libfuse's requests")
        #expect(!log.contains("opcode: WRITE"), "a write reached the daemon despite passthrough")
        #expect(log.contains("FUSE over io_uring: serving requests from"), "\(m.logTail())")
        let served = try Self.requestsServedFromRings(m)
        // 200 creates alone are 200 CREATE requests (and as many RELEASEs and SETATTRs).
        #expect((served ?? 0) >= 400, "served from the rings: \(String(describing: served))")
      }
    }
  }

  /// `--no-io-uring` keeps every request on /dev/fuse although the kernel offers the rings.
  @Test(.needs())
  func theOptionTurnsTheRingsOff() throws {
    try #require(TestEnvironment.isRoot, "enable_uring needs root")
    try Self.withRingsEnabled {
      try MountFixture.withMount(options: ["--no-io-uring"]) { m throws in
        try Data("text\n".utf8).write(to: URL(fileURLWithPath: m.path("note.md")))
        #expect(try String(contentsOfFile: m.path("note.md"), encoding: .utf8) == "text\n")
        #expect(try Self.requestsServedFromRings(m) == nil)
        let log = try String(contentsOfFile: "\(m.state)/docsync.log", encoding: .utf8)
        #expect(!log.contains("io_uring"), "\(m.logTail())")
      }
    }
  }

  /// Where the kernel offers the rings but this process cannot make any (io_uring switched off
  /// by the kernel.io_uring_disabled sysctl), docsync does not ask for them: once the kernel
  /// agreed, it would hold every request until rings that never come are registered.
  @Test(.needs())
  func noRingsMeansDevFuseNotAHang() throws {
    try #require(TestEnvironment.isRoot, "enable_uring and the sysctl need root")
    let sysctl = "/proc/sys/kernel/io_uring_disabled"
    let before = try String(contentsOfFile: sysctl, encoding: .utf8)
      .trimmingCharacters(in: .whitespacesAndNewlines)
    try "2".write(toFile: sysctl, atomically: false, encoding: .utf8)
    defer { try? before.write(toFile: sysctl, atomically: false, encoding: .utf8) }
    try Self.withRingsEnabled {
      try MountFixture.withMount { m throws in
        try Data("text\n".utf8).write(to: URL(fileURLWithPath: m.path("note.md")))
        #expect(try String(contentsOfFile: m.path("note.md"), encoding: .utf8) == "text\n")
        #expect(try Self.requestsServedFromRings(m) == nil)
      }
    }
  }

  /// The conformance suite through the rings, with passthrough (root).
  @Test(.needs())
  func everyCheckPassesThroughTheRings() throws {
    try #require(TestEnvironment.isRoot, "enable_uring needs root")
    try Self.withRingsEnabled {
      try ConformanceThroughMountTests.everyCheckPasses(options: []) { m in
        let served = try Self.requestsServedFromRings(m)
        #expect((served ?? 0) > 1000, "served from the rings: \(String(describing: served))")
      }
    }
  }

  /// The conformance suite through the rings with every read and write a request, as an
  /// ordinary user's mount has them.
  @Test(.needs())
  func everyCheckPassesThroughTheRingsWithoutPassthrough() throws {
    try #require(TestEnvironment.isRoot, "enable_uring needs root")
    try Self.withRingsEnabled {
      try ConformanceThroughMountTests.everyCheckPasses(options: ["--no-passthrough"]) { m in
        let served = try Self.requestsServedFromRings(m)
        #expect((served ?? 0) > 1000, "served from the rings: \(String(describing: served))")
      }
    }
  }

  /// fsx's random reads, writes, truncations and mmaps, every one a request on a ring.
  @Test(.needs())
  func fsxKeepsEveryByteThroughTheRings() throws {
    try #require(TestEnvironment.isRoot, "enable_uring needs root")
    try Self.withRingsEnabled {
      try ConformanceThroughMountTests.fsxKeepsEveryByte(options: ["--no-passthrough"]) { m in
        let served = try Self.requestsServedFromRings(m)
        #expect((served ?? 0) > 1000, "served from the rings: \(String(describing: served))")
      }
    }
  }
}
