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
}
