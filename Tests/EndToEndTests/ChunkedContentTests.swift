import Foundation
import MountHarness
import Testing

/// Content moves in chunks (issue 39): an edit of a large file sends and fetches about the
/// chunks it touched, a copy moves nothing, and every device ends with the same bytes. Run on
/// the SQLite hub here and on PostgreSQL by Tools/test's second pass.
@Suite("Content in chunks")
struct ChunkedContentTests {
  /// 64 MiB: about a thousand chunks under a tree of height 2, large enough that a whole-file
  /// transfer could not pass the bounds below.
  static let size = 64 << 20

  @Test(
    "a one-byte overwrite, a one-byte insert, a copy and a revert of a 64 MiB file move kilobytes",
    .needs(), .docsyncOnly)
  func editsMoveTheirChunks() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try check([
        "sh", "-c", "head -c \(Self.size) /dev/urandom > \"$1\"", "sh", a.path("disk.img"),
      ])
      try library.sync(a, b)
      try expectSame(a, b, "disk.img")
      let first = try moved(a, b)
      // The first sync moves the file once, compressed where it pays (random bytes do not).
      #expect(first.sent >= UInt64(Self.size) && first.sent < UInt64(Self.size) * 11 / 10)
      #expect(first.received >= UInt64(Self.size) && first.received < UInt64(Self.size) * 11 / 10)

      // One byte overwritten in the middle.
      try check([
        "sh", "-c", "printf 'X' | dd of=\"$1\" bs=1 seek=33554432 conv=notrunc status=none",
        "sh", a.path("disk.img"),
      ])
      try library.sync(a, b)
      try expectSame(a, b, "disk.img")
      let overwrite = try moved(a, b).minus(first)
      print("one-byte overwrite: sent \(overwrite.sent), received \(overwrite.received)")
      #expect(overwrite.sent <= 1 << 20 && overwrite.received <= 1 << 20, "\(overwrite)")

      // One byte inserted near the start: everything after it shifts.
      try check([
        "sh", "-c",
        "{ head -c 1000 \"$1\"; printf 'Y'; tail -c +1001 \"$1\"; } > \"$1.new\" && mv \"$1.new\" \"$1\"",
        "sh", a.path("disk.img"),
      ])
      try library.sync(a, b)
      try expectSame(a, b, "disk.img")
      let insert = try moved(a, b).minus(first).minus(overwrite)
      print("one-byte insert: sent \(insert.sent), received \(insert.received)")
      #expect(insert.sent <= 1 << 20 && insert.received <= 1 << 20, "\(insert)")

      // A copy: the hub has every chunk, and the other device holds them.
      let beforeCopy = try moved(a, b)
      try check(["cp", a.path("disk.img"), a.path("copy.img")])
      try library.sync(a, b)
      try expectSame(a, b, "copy.img")
      let copy = try moved(a, b).minus(beforeCopy)
      print("copy: sent \(copy.sent), received \(copy.received)")
      #expect(copy.sent <= 64 << 10 && copy.received <= 64 << 10, "\(copy)")

      // A revert to the first content, from a file kept outside the library.
      let beforeRevert = try moved(a, b)
      try check(["cp", b.path("copy.img"), "\(library.base)/kept.img"])
      try check(["sh", "-c", "printf 'Z' >> \"$1\"", "sh", a.path("copy.img")])
      try library.sync(a, b)
      try check(["cp", "\(library.base)/kept.img", b.path("copy.img")])
      try library.sync(b, a)
      try expectSame(a, b, "copy.img")
      let revert = try moved(a, b).minus(beforeRevert)
      print("append and revert: sent \(revert.sent), received \(revert.received)")
      #expect(revert.sent <= 1 << 20 && revert.received <= 1 << 20, "\(revert)")
    }
  }

  @Test(
    "empty, small and two-chunk files arrive whole, and an edit of one lands", .needs(),
    .docsyncOnly)
  func smallAndEmptyFilesMoveAsOneChunk() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try check([
        "sh", "-c",
        """
        : > "$1/empty"
        printf 'one line\\n' > "$1/small.txt"
        head -c 20000 /dev/urandom > "$1/two-chunks.bin"
        for i in $(seq 1 200); do echo "note $i" > "$1/note-$i.txt"; done
        """,
        "sh", a.mountPoint,
      ])
      try library.sync(a, b)
      for name in ["empty", "small.txt", "two-chunks.bin", "note-200.txt"] {
        try expectSame(a, b, name)
      }
      try check(["sh", "-c", "echo more >> \"$1\"", "sh", b.path("small.txt")])
      try library.sync(b, a)
      #expect(
        try String(contentsOfFile: a.path("small.txt"), encoding: .utf8) == "one line\nmore\n")
    }
  }
}

/// Bytes of content devices put on the hub and fetched from it.
private struct Moved: CustomStringConvertible {
  var sent: UInt64
  var received: UInt64

  func minus(_ other: Moved) -> Moved {
    Moved(sent: sent - other.sent, received: received - other.received)
  }

  var description: String { "sent \(sent) bytes, received \(received) bytes" }
}

/// What the devices moved so far, all of them together.
private func moved(_ devices: Device...) throws -> Moved {
  var total = Moved(sent: 0, received: 0)
  for device in devices {
    let status = try device.status()
    total.sent += status.contentBytesSent ?? 0
    total.received += status.contentBytesReceived ?? 0
  }
  return total
}

private func expectSame(_ a: Device, _ b: Device, _ name: String) throws {
  try check(["cmp", a.path(name), b.path(name)])
}
