import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A remote change lands in steps (content into a new working file, an intent, the rename,
/// the record of what the path shows); a crash or a power cut between any two of them must
/// leave nothing that looks like a local edit (DESIGN.md §2, invariants 3 and 4).
@Suite("Crashes while a remote change lands")
struct CrashDuringApplyTests {
  /// 20 kills: A saves a large file, and B's daemon is killed at a random moment while it
  /// pulls and applies it, every other round with a reader holding the file open on B.
  @Test(
    "SIGKILL of B at random moments while a large remote file lands: same bytes, no version",
    .needs("sqlite3"), .docsyncOnly)
  func killsWhileALargeFileLandsLeaveNoTrace() throws {
    try Library.with(programs: ["sqlite3"], hub: .sqlite) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      let contents = [Self.content(seed: 1), Self.content(seed: 2)]
      try Self.save(a.path("big.bin"), contents[0])
      try library.sync(a, b)
      // How long B takes to show a new save of A's after A's sync returns: the kills aim at
      // that window (no kill in this round).
      try Self.save(a.path("big.bin"), contents[1])
      let started = ContinuousClock.now
      try a.sync()
      let saved = try describe(a.path("big.bin")).mtimeNanoseconds
      while try describe(b.path("big.bin")).mtimeNanoseconds != saved {
        guard started.duration(to: .now) < .seconds(30) else {
          throw TestFailure("B did not show A's save within 30 s\n\(b.logTail())")
        }
        usleep(5000)
      }
      let window = started.duration(to: .now)
      try library.sync(b, a)
      var seed = UInt64(UInt32(truncatingIfNeeded: time(nil)))
      print("killsWhileALargeFileLandsLeaveNoTrace: seed \(seed), window \(window)")
      let windowMicroseconds = UInt64(window / .microseconds(1))
      for round in 2...21 {
        let content = contents[round % 2]
        let reader = round % 2 == 0 ? open(b.path("big.bin"), O_RDONLY) : -1
        try Self.save(a.path("big.bin"), content)
        try a.sync()
        // B's daemon sees A's record within milliseconds and copies 48 MiB for a few tenths
        // of a second: the kill lands somewhere in that window.
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let delay = UInt32((seed >> 33) % max(windowMicroseconds, 100_000))
        usleep(delay)
        try b.crash()
        if reader >= 0 { close(reader) }
        try b.mount()
        try library.sync(b, a)
        let context = "round \(round), kill after \(delay / 1000) ms"
        #expect(try Self.contentIs(b.path("big.bin"), content), "B: \(context)")
        #expect(try Self.contentIs(a.path("big.bin"), content), "A: \(context)")
        #expect(try findVersions(a).isEmpty && findVersions(b).isEmpty, "\(context)")
        // A's first save and one per round: B publishes nothing.
        #expect(try Self.hubRecords(library) == round + 1, "\(context)\n\(b.logTail())")
      }
      try expectSameTree(a, b)
    }
  }

  /// A new device's initial sync of many small files lands page by page (content fetched into
  /// memory, written into new working files, one flush for a page's names): a kill at any
  /// moment of it, even again while it finishes after a restart, leaves a device that, mounted
  /// again, shows every file right and publishes nothing.
  @Test(
    "SIGKILL of a new device at random moments of its initial sync of 3000 files: every file right",
    .needs("sqlite3"), .docsyncOnly)
  func killsDuringAnInitialSyncLeaveEveryFileRight() throws {
    try Library.with(programs: ["sqlite3"], hub: .sqlite) { library in
      let a = try library.device("laptop")
      try makeManyFiles(at: a.mountPoint, count: 3000)
      try a.sync(timeout: 300)
      let records = try Self.hubRecords(library)
      // How long a new device takes from its mount to a sync that returns: the kills aim at
      // that window.
      let started = ContinuousClock.now
      let first = try library.device("first")
      try first.sync(timeout: 300)
      let window = started.duration(to: .now)
      try expectSameTree(a, first)
      var seed = UInt64(UInt32(truncatingIfNeeded: time(nil)))
      print("killsDuringAnInitialSyncLeaveEveryFileRight: seed \(seed), window \(window)")
      let windowMicroseconds = UInt64(window / .microseconds(1))
      for round in 1...4 {
        let device = try library.device("new\(round)")
        var kills: [UInt32] = []
        // Killed once, or twice: the second time while it finishes what the first left.
        for _ in 0..<(1 + round % 2) {
          seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
          let delay = UInt32((seed >> 33) % max(windowMicroseconds, 100_000))
          usleep(delay)
          try device.crash()
          kills.append(delay / 1000)
          try device.mount()
        }
        try device.sync(timeout: 300)
        let context = "round \(round), kills after \(kills) ms\n\(device.logTail())"
        let diff = try treeDifferences(a, device)
        #expect(diff.isEmpty, "\(context)\n\(diff.prefix(20).joined(separator: "\n"))")
        #expect(try findVersions(device).isEmpty, "\(context)")
        #expect(try Self.hubRecords(library) == records, "the new device published: \(context)")
      }
    }
  }

  /// A power cut can take back a write that had not reached the disk: B's working file then
  /// holds the previous version's content and time while B's records say it shows the newer
  /// one. That older content is not a local edit: B shows the current version again and
  /// publishes nothing.
  @Test(
    "A working file that went back to older content while B was down is not published",
    .needs("sqlite3", "cp"), .docsyncOnly)
  func aFileThatWentBackIsNotPublished() throws {
    try Library.with(programs: ["sqlite3", "cp"], hub: .sqlite) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("doc.txt"), "version 1\n")
      try library.sync(a, b)
      let working = try Self.workingFile(b, "doc.txt")
      let saved = "\(library.base)/doc-as-the-disk-had-it"
      try check(["cp", "-p", working, saved])
      // Same size, so that only the content and the times tell the versions apart.
      try write(a.path("doc.txt"), "version 2\n")
      try library.sync(a, b)
      #expect(try read(b.path("doc.txt")) == "version 2\n")
      #expect(try Self.workingFile(b, "doc.txt") == working, "a closed file keeps its inode")
      try b.unmount()
      // What a power cut leaves: the old bytes and the old mtime, in the same file.
      try check(["cp", "-p", saved, working])
      try b.mount()
      try library.sync(b, a)
      #expect(try read(b.path("doc.txt")) == "version 2\n")
      #expect(try read(a.path("doc.txt")) == "version 2\n")
      #expect(try findVersions(a).isEmpty && findVersions(b).isEmpty)
      #expect(try Self.hubRecords(library) == 2, "\(b.logTail())")
      try expectSameTree(a, b)
    }
  }

  /// 48 MiB that differ from one seed to another in every mebibyte.
  static func content(seed: UInt8) -> Data {
    var block = [UInt8](repeating: 0, count: 1 << 20)
    for index in block.indices { block[index] = UInt8(truncatingIfNeeded: index &* 31) ^ seed }
    var data = Data(capacity: 48 << 20)
    for chunk in 0..<48 {
      block[0] = UInt8(chunk)
      data.append(contentsOf: block)
    }
    return data
  }

  /// Rewrites a file in place (open with O_TRUNC, write, close): one version.
  static func save(_ path: String, _ data: Data) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { throw TestFailure("open \(path): \(errnoText(errno))") }
    defer { close(fd) }
    try data.withUnsafeBytes { raw in
      var done = 0
      while done < raw.count {
        let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
        guard n > 0 else { throw TestFailure("write \(path): \(errnoText(errno))") }
        done += n
      }
    }
  }

  static func contentIs(_ path: String, _ expected: Data) throws -> Bool {
    try Data(contentsOf: URL(fileURLWithPath: path)) == expected
  }

  static func hubRecords(_ library: Library) throws -> Int {
    let result = try check(["sqlite3", library.hub, "SELECT count(*) FROM records"])
    return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
  }

  /// The working file in a device's state folder behind a path of its mount.
  static func workingFile(_ device: Device, _ path: String) throws -> String {
    var info = stat()
    guard stat(device.path(path), &info) == 0 else {
      throw TestFailure("stat \(path): \(errnoText(errno))")
    }
    let inode = UInt64(info.st_ino)
    let digits = Array("0123456789abcdef")
    let shard = String([digits[Int((inode >> 4) & 0xf)], digits[Int(inode & 0xf)]])
    return "\(device.state)/files/\(shard)/\(inode)"
  }
}
