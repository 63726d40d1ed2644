import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A receiving daemon killed at random moments while it rebuilds large files from chunks (some
/// copied from the versions it holds, some fetched): after every restart each file it shows is
/// whole and the one A saved, and nothing it rebuilt half is ever shown.
@Suite("A crash while content arrives as chunks")
struct ChunkedCrashTests {
  @Test(
    "kill -9 of the receiving daemon at random moments of chunked pulls: every file arrives whole",
    .needs(), .docsyncOnly)
  func killAtRandomMomentsOfPullsLosesNothing() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      let source = "\(library.base)/large.bin"
      try check([
        "sh", "-c", "head -c 41943040 /dev/urandom > \"$1\"", "sh", source,
      ])
      try check(["cp", source, a.path("large.bin")])
      try library.sync(a, b)
      for round in 0..<12 {
        // A changes a few MiB in place and adds a file that shares most of its chunks: B
        // copies the rest from what it holds.
        try check([
          "sh", "-c",
          """
          head -c 3145728 /dev/urandom | dd of="$1" bs=1M seek=$2 conv=notrunc status=none
          cp "$1" "$3"
          """,
          "sh", source, "\(round % 30)", "\(library.base)/copy-\(round).bin",
        ])
        try check(["cp", source, a.path("large.bin")])
        try check(["cp", "\(library.base)/copy-\(round).bin", a.path("copy-\(round).bin")])
        try a.sync()
        let delay = UInt32.random(in: 0...600_000)
        print("round \(round): kill -9 of B after \(delay / 1000) ms")
        usleep(delay)
        try b.crash()
        try b.mount()
        try b.sync(timeout: 120)
        try check(["cmp", source, b.path("large.bin")])
        for earlier in 0...round {
          try check([
            "cmp", "\(library.base)/copy-\(earlier).bin", b.path("copy-\(earlier).bin"),
          ])
        }
      }
      #expect(try b.status().waiting ?? [] == [])
      #expect(!b.log().contains("refused"), "\(b.logTail())")
    }
  }

  @Test(
    "kill -9 at random moments of prunes of chunked versions: the current files stay whole, nothing dangles",
    .needs(), .docsyncOnly)
  func killAtRandomMomentsOfPrunesLosesNothing() throws {
    try Library.with(hub: .sqlite) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      let source = "\(library.base)/large.bin"
      try check(["sh", "-c", "head -c 41943040 /dev/urandom > \"$1\"", "sh", source])
      try check(["cp", source, a.path("large.bin")])
      try library.sync(a, b)
      _ = try check(
        a.asOwner([try MountFixture.docsyncBinary(), "retention", a.mountPoint, "--keep", "0"]),
        env: a.environment)
      for round in 0..<8 {
        // A few versions that share most of their chunks, for the prune to let go.
        for edit in 0..<3 {
          try check([
            "sh", "-c",
            "head -c 65536 /dev/urandom | dd of=\"$1\" bs=64k seek=$2 conv=notrunc status=none",
            "sh", source, "\((round * 3 + edit) * 7 % 600)",
          ])
          try check(["cp", source, a.path("large.bin")])
          try a.sync()
        }
        try b.sync()
        let prune = Process()
        prune.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        prune.arguments = a.asOwner([try MountFixture.docsyncBinary(), "prune", a.mountPoint])
        prune.environment = ProcessInfo.processInfo.environment.merging(a.environment) { $1 }
        prune.standardOutput = FileHandle.nullDevice
        prune.standardError = FileHandle.nullDevice
        try prune.run()
        let delay = UInt32.random(in: 0...400_000)
        print("round \(round): kill -9 of A \(delay / 1000) ms into a prune")
        usleep(delay)
        try a.crash()
        prune.waitUntilExit()
        try expectNothingDangles(library)
        try a.mount()
        try library.sync(a, b)
        for device in [a, b] { try check(["cmp", source, device.path("large.bin")]) }
      }
      // A last prune, uninterrupted, and the files still read.
      _ = try check(
        a.asOwner([try MountFixture.docsyncBinary(), "prune", a.mountPoint]), env: a.environment)
      try expectNothingDangles(library)
      try library.sync(a, b)
      for device in [a, b] { try check(["cmp", source, device.path("large.bin")]) }
    }
  }
}

/// Every object a record of the SQLite hub reaches, through the nodes' references, is on the
/// hub (or a blob): a node is stored only once everything it names is, and a sweep never
/// takes what a record still reaches.
func expectNothingDangles(
  _ library: Library, sourceLocation: SourceLocation = #_sourceLocation
) throws {
  let dangling = try check([
    "sqlite3", library.hub,
    """
    WITH RECURSIVE named(id) AS (
      SELECT hash FROM record_blobs
      UNION
      SELECT substr(o.refs, 32 * k.n + 1, 32) FROM named
        JOIN objects AS o ON o.id = named.id
        JOIN (WITH RECURSIVE n(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM n WHERE n < 1023)
          SELECT n FROM n) AS k ON o.refs IS NOT NULL AND 32 * k.n < length(o.refs)
    )
    SELECT count(*) FROM named
    WHERE id NOT IN (SELECT id FROM objects) AND id NOT IN (SELECT hash FROM blobs)
    """,
  ]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
  #expect(
    dangling == "0", "\(dangling) object(s) reached from records are not on the hub",
    sourceLocation: sourceLocation)
  // No row names bytes past the end of its pack (or a pack gone): a pack's bytes are on disk
  // before the rows naming them commit, and a rewrite removes a pack only after its rows moved.
  let ends = try check([
    "sqlite3", library.hub,
    #"SELECT pack || ' ' || max("offset" + length) FROM objects "#
      + "WHERE pack IS NOT NULL GROUP BY pack",
  ]).stdout.split(separator: "\n")
  for line in ends {
    let parts = line.split(separator: " ")
    guard parts.count == 2, let end = Int64(parts[1]) else {
      Issue.record("unexpected line \(line)", sourceLocation: sourceLocation)
      continue
    }
    let file = library.hub + ".packs/" + parts[0]
    let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?
      .int64Value
    #expect(
      (size ?? -1) >= end, "\(file) is \(size.map(String.init) ?? "gone"), its rows reach \(end)",
      sourceLocation: sourceLocation)
  }
}
