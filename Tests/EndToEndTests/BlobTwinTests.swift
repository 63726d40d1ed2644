import Foundation
import MountHarness
import Testing

/// Versions made before chunks become chunks on the SQLite hub: a mount cuts the hub's old
/// blobs in the background, and a device that holds an old version then fetches a newer one
/// as the chunks it lacks.
@Suite("Old blobs become chunks")
struct BlobTwinTests {
  @Test(
    "a mount converts old blobs, and a device fetches an old-style version's edit as kilobytes",
    .needs(), .docsyncOnly)
  func aMountConvertsAndADeviceMovesOnlyWhatItLacks() throws {
    try Library.with(hub: .sqlite) { library in
      // A device that records as before chunks: its versions are whole blobs on the hub.
      let old = try library.device("old", environment: ["DOCSYNC_CONTENT": "blobs"])
      let b = try library.device("desktop")
      try check([
        "sh", "-c", "head -c \(32 << 20) /dev/urandom > \"$1\"", "sh", old.path("disk.img"),
      ])
      try library.sync(old, b)
      try check(["cmp", old.path("disk.img"), b.path("disk.img")])
      try b.pause()
      try check([
        // 16 bytes, not one: a random byte is the one written once in 256 runs, and then no
        // new content is made at all.
        "sh", "-c",
        "printf 'XXXXXXXXXXXXXXXX' | dd of=\"$1\" bs=1 seek=16777216 conv=notrunc status=none",
        "sh", old.path("disk.img"),
      ])
      try old.sync()
      func twins() throws -> Int {
        Int(
          try check(["sqlite3", library.hub, "SELECT count(*) FROM blob_twins"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
      }
      #expect(try twins() == 0)
      // A new device's mount converts both blobs 10 s after it opened the hub.
      let c = try library.device("third")
      // Its first run comes 10 s after it opened the hub, the next a minute later.
      let deadline = Date().addingTimeInterval(150)
      while try twins() < 2 && Date() < deadline { usleep(200_000) }
      #expect(try twins() == 2, "\(library.logTails())")
      #expect(
        try check(["sqlite3", library.hub, "SELECT count(*) FROM blobs"]).stdout == "0\n")

      let before = try b.status().contentBytesReceived ?? 0
      try b.resume()
      try b.sync()
      try check(["cmp", old.path("disk.img"), b.path("disk.img")])
      let moved = (try b.status().contentBytesReceived ?? 0) - before
      print("a 16-byte edit of a converted 32 MiB file: \(moved) bytes received")
      #expect(moved > 0 && moved <= 1 << 20, "\(moved) bytes fetched for a 16-byte edit")
      try c.sync()
      try check(["cmp", old.path("disk.img"), c.path("disk.img")])
    }
  }
}
