import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What the state folder must keep: across a clean unmount, and across a crash of the daemon
/// for whatever was fsynced. In plain mode the remount and the crash are no-ops, which proves
/// only the checks themselves.
@Suite("Persistence across remount and crash")
struct PersistenceTests {
  @Test(.needs())
  func filesModesMtimesSymlinksAndXattrsSurviveRemount() throws {
    try MountFixture.withMount { m throws in
      try makeRichTree(at: m.path("kept"))
      try makeManyFiles(at: m.path("kept/many"), count: 200)
      try setMtime(m.path("kept/many"), seconds: 1_700_000_000, nanoseconds: 987_654_321)
      let before = try snapshot(m.mountPoint)
      try m.remount()
      let after = try snapshot(m.mountPoint)
      let diff = differences(before, after)
      #expect(diff.isEmpty, "after remount:\n\(diff.prefix(20).joined(separator: "\n"))")
      // A second remount catches state that was only rebuilt in memory by the first.
      try m.remount()
      #expect(differences(before, try snapshot(m.mountPoint)).isEmpty)
    }
  }

  @Test(.needs("python3"))
  func fsyncedContentSurvivesKillDashNine() throws {
    try MountFixture.withMount(programs: ["python3"]) { m throws in
      // 8 MiB of varied bytes across several writes, then fsync: what was acknowledged as
      // durable must all be there after the daemon dies without a chance to flush.
      let script = """
        import hashlib, os, sys
        data = b"".join(hashlib.sha256(str(i).encode()).digest() * 1024 for i in range(256))
        fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for offset in range(0, len(data), 100_000):
            os.write(fd, data[offset:offset + 100_000])
        os.fsync(fd)
        os.close(fd)
        print(hashlib.sha256(data).hexdigest(), len(data))
        """
      try FileManager.default.createDirectory(
        atPath: m.path("durable"), withIntermediateDirectories: true)
      let written = try check(["python3", "-c", script, m.path("durable/data.bin")])
      try write(m.path("durable/small.txt"), "small\n")
      let small = try check(["python3", "-c", fsyncScript, m.path("durable/small.txt")])
      #expect(small.stdout == "ok\n")

      try m.crash()
      try m.mount()
      let read = try check(
        [
          "python3", "-c",
          "import hashlib,sys; d=open(sys.argv[1],'rb').read(); print(hashlib.sha256(d).hexdigest(), len(d))",
          m.path("durable/data.bin"),
        ])
      #expect(read.stdout == written.stdout, "fsynced file after kill -9 and remount")
      #expect(try String(contentsOfFile: m.path("durable/small.txt"), encoding: .utf8) == "small\n")
    }
  }

  private let fsyncScript = """
    import os, sys
    fd = os.open(sys.argv[1], os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    print("ok")
    """
}
