import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Earlier versions under `.history/`, the same on every device, restored by `cp` (issue 16).
@Suite("History as files")
struct HistoryTests {
  @Test(
    "Five saves on A, a delete on B: both list the same five versions, and cp restores one everywhere",
    .needs(), .docsyncOnly)
  func savedFiveTimesThenDeletedIsRestoredByCp() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      let path = "notes/plan.md"
      try FileManager.default.createDirectory(
        atPath: a.path("notes"), withIntermediateDirectories: true)
      // B pulls all five in one page, and pulling fetches only what a path may show: the
      // earlier versions' content is fetched when B reads them.
      try b.pause()
      for save in 1...5 {
        try write(a.path(path), "save \(save) of the plan\n")
        try a.sync()
      }
      try b.resume()
      try library.sync(a, b)
      try check(["rm", path], cwd: b.mountPoint)
      try library.sync(b, a)
      for device in [a, b] {
        #expect(!FileManager.default.fileExists(atPath: device.path(path)), "\(device.name)")
      }

      let namesA = try historyNames(a, of: path)
      let namesB = try historyNames(b, of: path)
      #expect(namesA.count == 5, "\(namesA)")
      #expect(namesA == namesB)
      #expect(namesA.allSatisfy { isVersionName($0, device: "laptop", extension: ".md") })
      for device in [a, b] {
        let contents = try namesA.map { try read(device.path(".history/\(path)/\($0)")) }
        #expect(contents == (1...5).map { "save \($0) of the plan\n" }, "\(device.name)")
        let first = device.path(".history/\(path)/\(namesA[0])")
        #expect(try getUserXattr(first, "user.docsync.device") == Array("laptop".utf8))
        #expect(try !getUserXattr(first, "user.docsync.version").isEmpty)
        // A deleted document's versions are the owner's alone.
        #expect(try describe(first).mode & 0o777 == 0o400, "\(device.name)")
        // Hidden from the root's listing, so that walking the mount does not walk history.
        let root = try FileManager.default.contentsOfDirectory(atPath: device.mountPoint)
        #expect(!root.contains(".history"), "\(root)")
        #expect(try describe(device.path(".history/notes")).kind == .directory)
      }
      let mtimesA = try namesA.map {
        try describe(a.path(".history/\(path)/\($0)")).mtimeNanoseconds
      }
      let mtimesB = try namesA.map {
        try describe(b.path(".history/\(path)/\($0)")).mtimeNanoseconds
      }
      #expect(mtimesA == mtimesB)

      // Read-only: nothing is created, written or removed inside.
      let version = ".history/\(path)/\(namesA[2])"
      for argv in [
        ["touch", ".history/new.md"], ["sh", "-c", "echo x > \"$1\"", "sh", version],
        ["rm", "-f", version], ["mkdir", ".history/folder"], ["touch", ".history"],
      ] {
        let result = try run(argv, cwd: a.mountPoint)
        #expect(result.status != 0, "\(argv) succeeded")
      }
      #expect(try read(a.path(version)) == "save 3 of the plan\n")

      // `docsync history` of the deleted document lists the five saves and the deletion, and
      // its restore command is the `cp` that brings a version back.
      let report = try history(b, path)
      #expect(report.versions.map(\.state) == Array(repeating: "earlier", count: 5) + ["deleted"])
      #expect(report.versions.compactMap(\.name) == namesB)
      #expect(report.versions.prefix(5).allSatisfy { $0.device == "laptop" })
      let restore = try #require(report.versions[2].command)
      #expect(restore.hasPrefix("cp "), "\(restore)")
      #expect(try history(a, ".history/\(path)").versions.count == 6)

      try check(["sh", "-c", restore.replacingOccurrences(of: b.mountPoint, with: a.mountPoint)])
      try library.sync(a, b)
      for device in [a, b] {
        #expect(try read(device.path(path)) == "save 3 of the plan\n", "\(device.name)")
      }
      // The restore is a version like any other: the earlier ones are still there, and the
      // deletion, a version of no content, is not listed.
      #expect(try historyNames(b, of: path) == namesA)
    }
  }
}

/// The names under `.history/<path>/`, oldest first: by mtime, which is the version's time to
/// the millisecond (the name has it to the second only).
func historyNames(_ device: Device, of path: String) throws -> [String] {
  let folder = device.path(".history/\(path)")
  return try FileManager.default.contentsOfDirectory(atPath: folder)
    .map { (name: $0, time: try describe("\(folder)/\($0)").mtimeNanoseconds) }
    .sorted { ($0.time, $0.name) < ($1.time, $1.name) }.map(\.name)
}

/// What `docsync history --json` reports (the fields the tests read).
struct HistoryJSON: Decodable {
  struct Version: Decodable {
    var state: String
    var name: String?
    var device: String
    var command: String?
  }
  var versions: [Version]
}

/// `docsync history --json` of a path relative to the device's mount.
func history(_ device: Device, _ path: String) throws -> HistoryJSON {
  let result = try check(
    device.asOwner([try MountFixture.docsyncBinary(), "history", device.path(path), "--json"]),
    env: device.environment)
  return try JSONDecoder().decode(HistoryJSON.self, from: Data(result.stdout.utf8))
}
