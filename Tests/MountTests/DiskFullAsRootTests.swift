import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A disk that fills up under a device's state folder: a save still lands in the working file,
/// but its copy for upload cannot be made. Root only for the small tmpfs that stands for the
/// full disk; the mounts are ordinary docsync mounts.
@Suite("A full disk under the state folder, as root", .docsyncOnly, .asRoot)
struct DiskFullAsRootTests {
  static let size = 1 << 20

  static func content(_ seed: UInt8) -> [UInt8] {
    (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed }
  }

  /// Rewrites the file in place (O_TRUNC), as nano or VS Code save.
  static func save(_ path: String, _ bytes: [UInt8]) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
  }

  /// Whether the file at `path` holds `bytes` (compared here, so that a failure does not
  /// print a mebibyte).
  static func holds(_ path: String, _ bytes: [UInt8]) -> Bool {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) == bytes } ?? false
  }

  /// The save waits and `docsync sync` says why; the other device keeps the document (before,
  /// the save was recorded as a deletion and the other device deleted it); once space is
  /// freed the save reaches it.
  @Test(.needs())
  func aSaveThatCannotBeCopiedOnAFullDiskDeletesNothingElsewhere() throws {
    try #require(TestEnvironment.isRoot, "mounting a small tmpfs needs root")
    try MountFixture.withScratch { m throws in
      let binary = try MountFixture.docsyncBinary()
      let small = m.scratch("small")
      try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
      try check(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", small])
      defer { _ = umount2(small, Int32(MNT_DETACH)) }
      let hub = m.scratch("hub.sqlite")
      let a = m.mountPoint
      let b = m.scratch("b")
      try FileManager.default.createDirectory(atPath: b, withIntermediateDirectories: true)
      try MountFixture.makePrivateFolder(small + "/state")
      try MountFixture.makePrivateFolder(m.scratch("b-state"))
      try check([binary, "mount", a, "--state", small + "/state", "--hub", hub, "--device", "a"])
      defer { _ = try? run([binary, "unmount", a]) }
      try check([
        binary, "mount", b, "--state", m.scratch("b-state"), "--hub", hub, "--device", "b",
      ])
      defer { _ = try? run([binary, "unmount", b]) }

      let first = Self.content(1)
      try Self.save(a + "/doc.bin", first)
      try check([binary, "sync", a])
      try check([binary, "sync", b])
      #expect(Self.holds(b + "/doc.bin", first))

      // Leave half the document's size free: rewriting it in place needs no more, its copy
      // for upload needs all of it.
      var info = statvfs()
      try #require(statvfs(small, &info) == 0)
      let free = Int(info.f_bavail) * Int(info.f_frsize)
      let filler = open(small + "/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
      try #require(filler >= 0)
      #expect(posix_fallocate(filler, 0, off_t(free - Self.size / 2)) == 0)
      close(filler)

      let second = Self.content(2)
      try Self.save(a + "/doc.bin", second)
      let refused = try run([binary, "sync", a, "--timeout", "20"], timeout: .seconds(60))
      #expect(refused.status == 1, "\(refused)")
      #expect(refused.stderr.contains("doc.bin"), "\(refused.stderr)")
      #expect(refused.stderr.contains("No space left on device"), "\(refused.stderr)")
      let status = try check([binary, "status", a]).stdout
      #expect(status.contains("cannot read to sync: 1"), "\(status)")
      #expect(status.contains("doc.bin (") && status.contains("No space left on device"))
      let json = try check([binary, "status", a, "--json"]).stdout
      #expect(json.contains("\"unreadable\""), "\(json)")
      try check([binary, "sync", b])
      #expect(Self.holds(b + "/doc.bin", first), "the other device lost the document")
      #expect(Self.holds(a + "/doc.bin", second))

      #expect(unlink(small + "/filler") == 0)
      let synced = try run([binary, "sync", a], timeout: .seconds(60))
      let log = (try? String(contentsOfFile: small + "/state/docsync.log", encoding: .utf8)) ?? ""
      #expect(synced.status == 0, "\(synced)\n\(log.suffix(2000))")
      try check([binary, "sync", b])
      #expect(Self.holds(b + "/doc.bin", second))
      #expect(!(try check([binary, "status", a]).stdout.contains("cannot read to sync")))
    }
  }
}
