import DocumentModel
import Foundation
import MountHarness
import Testing

/// Two devices apart that save the same bytes at one path made one version: after they sync
/// there is no conflict, no `.versions` entry, and one head on the hub; different bytes still
/// conflict.
@Suite("Equal saves on two devices are not a conflict", .docsyncOnly)
struct EqualSavesTests {
  /// The heads of `path` on the hub: its records that no other record of it follows.
  func hubHeads(_ library: Library, of path: String) throws -> [VersionRecord] {
    let records = try AutomaticMergeTests().hubRecords(library, of: path)
    let followed = Set(records.flatMap(\.parents))
    return records.filter { !followed.contains($0.id) }
  }

  @Test(
    "A new file, an edit and a nested path saved alike on two devices: one version each",
    .needs("find", "sqlite3"))
  func equalSavesMakeOneVersionAndUnequalOnesStillConflict() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("edited.txt"), "base\n")
      try write(a.path("different.txt"), "base\n")
      try library.sync(a, b)
      try b.pause()
      for device in [a, b] {
        try write(device.path("new.txt"), "the same download\n")
        try write(device.path("edited.txt"), "the same edit\n")
        try FileManager.default.createDirectory(
          atPath: device.path("objects/01"), withIntermediateDirectories: true)
        try write(device.path("objects/01/abc"), "blob 11\u{0}the same object")
        try write(device.path("different.txt"), "\(device.name)'s edit\n")
        if device === a {
          try a.sync()
          usleep(20_000)
        }
      }
      try b.resume()
      try library.sync(b, a, b, a)
      let equal = ["new.txt", "edited.txt", "objects/01/abc", "objects/01", "objects"]
      for device in [a, b] {
        #expect(try read(device.path("new.txt")) == "the same download\n")
        #expect(try read(device.path("edited.txt")) == "the same edit\n")
        #expect(try read(device.path("objects/01/abc")) == "blob 11\u{0}the same object")
        // Only the unequal save is in `.versions`, and it is the only conflict.
        let listed = try findVersions(device)
        #expect(
          listed.allSatisfy { $0.hasPrefix(".versions/different.txt/") },
          "\(device.name): \(listed)"
        )
        #expect(try versionNames(device, of: "different.txt").count == 1, "\(device.name)")
        #expect(
          try device.status().conflicts.map(\.path) == ["different.txt"], "\(device.name)")
        for path in equal {
          #expect(
            !FileManager.default.fileExists(atPath: device.path(".versions/\(path)")),
            "\(device.name) lists \(path)")
          // Not even for a moment before the two became one record: no conflict was noted.
          #expect(!device.log().contains("conflict at \(path):"), "\(device.logTail())")
        }
      }
      try expectSameTree(a, b)
      for path in equal {
        let heads = try hubHeads(library, of: path)
        #expect(heads.count == 1, "\(path): \(heads)")
      }
      #expect(try hubHeads(library, of: "different.txt").count == 2)
      // Each device saved each equal path once; the merge follows both.
      let merges = try AutomaticMergeTests().hubRecords(library, of: "new.txt")
        .filter { $0.parents.count == 2 }
      #expect(merges.count == 1 && merges.first?.deviceName == AutoMerge.deviceName)
    }
  }
}
