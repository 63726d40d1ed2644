import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// How many requests everyday steps cost, counted in libfuse's request log (`--fuse-debug`):
/// each request is 50-70 µs here, and README's table lists the counts.
@Suite("Requests per operation", .docsyncOnly)
struct RequestCountTests {
  /// How many requests with `opcode` the log shows after its first `skipping` lines.
  static func count(_ opcode: String, in m: MountFixture, after skipping: Int = 0) throws -> Int {
    let log = try String(contentsOfFile: "\(m.state)/docsync.log", encoding: .utf8)
    return log.split(separator: "\n").dropFirst(skipping)
      .filter { $0.contains("opcode: \(opcode) ") }.count
  }

  static func lineCount(_ m: MountFixture) throws -> Int {
    try String(contentsOfFile: "\(m.state)/docsync.log", encoding: .utf8)
      .split(separator: "\n").count
  }

  /// An editor's atomic save (create a temporary file, write, fsync, rename it over the
  /// document) asks for no folder's attributes: under `default_permissions`, which docsync
  /// leaves to shared mounts, the kernel forgot the folder's mode at every create and rename
  /// and asked for it again before the next one, two GETATTRs of eleven requests a save.
  @Test(.needs())
  func anAtomicSaveAsksForNoAttributes() throws {
    try MountFixture.withMount(options: ["--fuse-debug"]) { m throws in
      #expect(mkdir(m.path("notes"), 0o755) == 0)
      func save(_ round: Int) {
        let temporary = m.path("notes/.plan.md.tmp")
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        #expect(fd >= 0, "create: errno \(errno)")
        let text = Array("save \(round)\n".utf8)
        #expect(write(fd, text, text.count) == text.count)
        #expect(fsync(fd) == 0)
        #expect(close(fd) == 0)
        #expect(rename(temporary, m.path("notes/plan.md")) == 0, "rename: errno \(errno)")
      }
      save(0)
      let before = try Self.lineCount(m)
      for round in 1...20 { save(round) }
      let getattrs = try Self.count("GETATTR", in: m, after: before)
      let renames = try Self.count("RENAME", in: m, after: before)
      #expect(getattrs == 0, "\(m.logTail())")
      #expect(renames == 20)
      #expect(try String(contentsOfFile: m.path("notes/plan.md"), encoding: .utf8) == "save 20\n")
    }
  }

  /// The kernel keeps a symlink's target (FUSE_CACHE_SYMLINKS): following a link five times
  /// and reading it five times asks the daemon once, where it asked ten times.
  @Test(.needs())
  func aSymlinkIsReadOnce() throws {
    try MountFixture.withMount(options: ["--fuse-debug"]) { m throws in
      try Data("x\n".utf8).write(to: URL(fileURLWithPath: m.path("target.md")))
      #expect(symlink("target.md", m.path("link.md")) == 0)
      let before = try Self.lineCount(m)
      var buffer = [CChar](repeating: 0, count: 64)
      for _ in 0..<5 {
        #expect(try String(contentsOfFile: m.path("link.md"), encoding: .utf8) == "x\n")
        #expect(readlink(m.path("link.md"), &buffer, buffer.count) == 9)
      }
      #expect(try Self.count("READLINK", in: m, after: before) == 1, "\(m.logTail())")
    }
  }

  /// With FUSE_HANDLE_KILLPRIV_V2 the kernel asks for `security.capability` once per file, at
  /// its first write, instead of before every write (16 GETXATTRs for 16 writes before).
  @Test(.needs())
  func writesAskForSecurityCapabilityOncePerFile() throws {
    try MountFixture.withMount(options: ["--fuse-debug"]) { m throws in
      let before = try Self.lineCount(m)
      let block = [UInt8](repeating: 0x61, count: 4096)
      for _ in 0..<2 {
        let fd = open(m.path("blocks.bin"), O_WRONLY | O_CREAT | O_APPEND, 0o644)
        try #require(fd >= 0)
        for _ in 0..<16 { #expect(write(fd, block, block.count) == block.count) }
        close(fd)
      }
      #expect(try Self.count("WRITE", in: m, after: before) == 32, "\(m.logTail())")
      #expect(try Self.count("GETXATTR", in: m, after: before) <= 1, "\(m.logTail())")
    }
  }

  /// What a read-write descriptor's writes put in the kernel's page cache serves the file's
  /// next reads: the kernel no longer drops a file's pages when the daemon's mtime differs from
  /// the one it stamped itself (AUTO_INVAL_DATA refused), which made the first read after a
  /// write read it all. (A write-only descriptor writes around the cache: next test.)
  @Test(.needs())
  func aFileJustWrittenIsReadFromTheCache() throws {
    try MountFixture.withMount(options: ["--fuse-debug"]) { m throws in
      let content = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
      let fd = open(m.path("written.bin"), O_RDWR | O_CREAT | O_TRUNC, 0o644)
      try #require(fd >= 0)
      #expect(write(fd, content, content.count) == content.count)
      close(fd)
      let before = try Self.lineCount(m)
      #expect(try Data(contentsOf: URL(fileURLWithPath: m.path("written.bin"))) == Data(content))
      #expect(try Self.count("READ", in: m, after: before) == 0, "\(m.logTail())")
    }
  }

  /// A write-only descriptor's writes go from the writer's memory to the daemon without the
  /// kernel's page cache (FOPEN_DIRECT_IO): one or two WRITEs for a 1 MiB write, and the pages
  /// another descriptor had cached of the written range are dropped, so it reads the new bytes
  /// (from the daemon: the write left none in the cache).
  @Test(.needs())
  func aWriteOnlyWriterSkipsThePageCacheAndReadersSeeItsBytes() throws {
    try MountFixture.withMount(options: ["--fuse-debug"]) { m throws in
      let old = [UInt8](repeating: 0x61, count: 1 << 20)
      try Data(old).write(to: URL(fileURLWithPath: m.path("shared.bin")))
      let reader = open(m.path("shared.bin"), O_RDONLY)
      try #require(reader >= 0)
      defer { close(reader) }
      var seen = [UInt8](repeating: 0, count: 1 << 20)
      #expect(pread(reader, &seen, seen.count, 0) == seen.count && seen == old)
      let new = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
      let before = try Self.lineCount(m)
      let writer = open(m.path("shared.bin"), O_WRONLY)
      try #require(writer >= 0)
      #expect(pwrite(writer, new, new.count, 0) == new.count)
      close(writer)
      // The kernel sends the writer's own pages, at most 256 to a request (max_pages): an
      // array that does not start on a page boundary spans 257 and goes in two WRITEs.
      #expect((1...2).contains(try Self.count("WRITE", in: m, after: before)), "\(m.logTail())")
      #expect(pread(reader, &seen, seen.count, 0) == seen.count && seen == new)
      // Read from the daemon: the write put nothing in the cache and dropped the old pages.
      #expect(try Self.count("READ", in: m, after: before) > 0, "\(m.logTail())")
    }
  }
}
