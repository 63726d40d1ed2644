import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A daemon killed while the SQLite hub writes a large blob beside its file (`<hub>.blobs/`):
/// the hub shows no half blob, and the file still reaches the other device (DESIGN.md §2,
/// invariants 3 and 5).
@Suite("A crash while a large file goes to the hub")
struct LargePushCrashTests {
  @Test(
    "kill -9 while a large blob is written beside the SQLite hub: no half blob, and the file reaches B",
    .needs(), .docsyncOnly)
  func killDuringTheHubSideWriteLosesNothing() throws {
    try Library.with(hub: .sqlite) { library in
      // Whole blobs, as versions made before chunks and merges still move.
      let wholeBlobs = ["DOCSYNC_CONTENT": "blobs"]
      let a = try library.device("laptop", environment: wholeBlobs)
      let b = try library.device("desktop", environment: wholeBlobs)
      let source = "\(library.base)/large.bin"
      try writeLarge(source, mebibytes: 256)
      // Paused, A records the save without pushing it; an edit in place then leaves the saved
      // content in no clean working file, so its blob stays on A and goes to the hub as a
      // copy (a blob A would drop after the upload goes by rename instead).
      try a.pause()
      try check(["cp", source, a.path("large.bin")])
      let hex = String(try check(["sha256sum", source]).stdout.prefix(64))
      let blob = "\(a.state)/blobs/\(hex.prefix(2))/\(hex)"
      let recorded = Date().addingTimeInterval(60)
      while !FileManager.default.fileExists(atPath: blob) && Date() < recorded { usleep(2000) }
      #expect(FileManager.default.fileExists(atPath: blob), "A did not record large.bin")
      for target in [source, a.path("large.bin")] {
        try check(["sh", "-c", "echo edited >> \"$1\"", "sh", target])
      }
      try a.resume()

      // The put has begun once its temporary file shows in the hub's blob folder.
      let blobs = library.hub + ".blobs"
      let deadline = Date().addingTimeInterval(60)
      var putting = false
      while !putting && Date() < deadline {
        putting = names(blobs).contains { $0.hasPrefix(".put-") }
        if !putting { usleep(2000) }
      }
      #expect(putting, "no put of large.bin began within 60 s")
      try a.crash()

      // Every blob the folder names is whole and recorded; whatever was cut short is only
      // a temporary file that no row names.
      try expectOnlyWholeBlobs(library)
      try a.mount()
      try library.sync(a, b)
      try check(["cmp", source, b.path("large.bin")])
      try check(["cmp", source, a.path("large.bin")])
      try expectOnlyWholeBlobs(library)
      #expect(names(blobs).contains { !$0.hasPrefix(".") })
    }
  }

  /// A save whose blob the device would drop once the hub has it goes to the hub by rename
  /// (`Hub.adoptBlob`); other saves are copied. Killed at random moments of such pushes, round
  /// after round, some rounds with an edit in place of the file saved just before (so that its
  /// working file no longer holds the saved content): after every restart the hub names only
  /// whole blobs, every record's content is on the hub, and every file reaches B whole.
  @Test(
    "kill -9 at random moments of large pushes: every saved version stays whole and fetchable",
    .needs(), .docsyncOnly)
  func killAtRandomMomentsOfPushesLosesNothing() throws {
    try Library.with(hub: .sqlite) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      var expected: [String: String] = [:]
      for round in 0..<6 {
        let name = "large-\(round).bin"
        let source = "\(library.base)/\(name)"
        try writeLarge(source, mebibytes: 40, seed: round + 1)
        try check(["cp", source, a.path(name)])
        expected[name] = source
        if round % 2 == 1 {
          // The previous round's file, edited in place: the content it was saved with is the
          // hub's alone, if its hand-over happened.
          let previous = "large-\(round - 1).bin"
          let edited = "\(library.base)/\(previous).edited"
          try check(["cp", expected[previous]!, edited])
          for target in [edited, a.path(previous)] {
            try check([
              "dd", "if=\(source)", "of=\(target)", "bs=65536", "count=3", "seek=5",
              "conv=notrunc", "status=none",
            ])
          }
          expected[previous] = edited
        }
        let delay = UInt32.random(in: 0...1_200_000)
        print("round \(round): kill -9 after \(delay / 1000) ms")
        usleep(delay)
        try a.crash()
        try expectOnlyWholeBlobs(library)
        try a.mount()
        try library.sync(a, b)
        try expectOnlyWholeBlobs(library)
        try expectEveryRecordsContent(library)
        for (file, content) in expected.sorted(by: { $0.key < $1.key }) {
          try check(["cmp", content, b.path(file)])
        }
      }
      #expect(try a.status().pendingUploads == 0)
      #expect(!a.log().contains("is held back"), "\(a.logTail())")
    }
  }

  /// Every blob or object a record names is on the hub, and every blob file hashes to its
  /// name.
  private func expectEveryRecordsContent(
    _ library: Library, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let missing = try check([
      "sqlite3", library.hub,
      """
      SELECT count(*) FROM record_blobs
      WHERE hash NOT IN (SELECT hash FROM blobs) AND hash NOT IN (SELECT id FROM objects)
      """,
    ]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    #expect(missing == "0", "\(missing) blob(s) or object(s) named by records are not on the hub")
    try expectNothingDangles(library, sourceLocation: sourceLocation)
    let folder = library.hub + ".blobs"
    for name in names(folder) where !name.hasPrefix(".") {
      let sum = try check(["sha256sum", "\(folder)/\(name)"]).stdout.prefix(64)
      #expect(sum == name, "the hub's file \(name) holds \(sum)", sourceLocation: sourceLocation)
    }
  }

  private func expectOnlyWholeBlobs(
    _ library: Library, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let rows = try check([
      "sqlite3", library.hub, "SELECT lower(hex(hash)) || ' ' || size FROM blobs WHERE file = 1",
    ]).stdout.split(separator: "\n").map(String.init)
    let recorded = Dictionary(
      uniqueKeysWithValues: rows.map { row in
        let parts = row.split(separator: " ")
        return (String(parts[0]), Int(parts[1]) ?? -1)
      })
    let folder = library.hub + ".blobs"
    for name in names(folder) where !name.hasPrefix(".") {
      let size =
        (try? FileManager.default.attributesOfItem(atPath: "\(folder)/\(name)")[.size])
        as? Int
      #expect(
        recorded[name] != nil && recorded[name] == size,
        "\(name) is in the blob folder, \(size ?? -1) bytes, recorded as \(recorded[name] ?? -1)",
        sourceLocation: sourceLocation)
    }
    for name in recorded.keys {
      #expect(
        FileManager.default.fileExists(atPath: "\(folder)/\(name)"),
        "blob \(name) is recorded but has no file", sourceLocation: sourceLocation)
    }
  }

  private func names(_ folder: String) -> [String] {
    (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
  }

  /// Writes `mebibytes` MiB that do not repeat from one MiB to the next, nor from one `seed`
  /// to another.
  private func writeLarge(_ path: String, mebibytes: Int, seed: Int = 0) throws {
    guard FileManager.default.createFile(atPath: path, contents: nil),
      let handle = FileHandle(forWritingAtPath: path)
    else { throw TestFailure("cannot create \(path)") }
    defer { try? handle.close() }
    var block = [UInt8](repeating: 0, count: 1 << 20)
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    for index in block.indices {
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      block[index] = UInt8(truncatingIfNeeded: state)
    }
    for mebibyte in 0..<mebibytes {
      withUnsafeBytes(of: UInt64(mebibyte) | UInt64(seed) << 32) {
        block.replaceSubrange(0..<8, with: $0)
      }
      try handle.write(contentsOf: block)
    }
  }
}
