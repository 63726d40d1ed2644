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
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      let source = "\(library.base)/large.bin"
      try writeLarge(source, mebibytes: 256)
      try check(["cp", source, a.path("large.bin")])

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

  /// Writes `mebibytes` MiB that do not repeat from one MiB to the next.
  private func writeLarge(_ path: String, mebibytes: Int) throws {
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
      withUnsafeBytes(of: UInt64(mebibyte)) { block.replaceSubrange(0..<8, with: $0) }
      try handle.write(contentsOf: block)
    }
  }
}
