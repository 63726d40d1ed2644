import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Retention kept on the hub, and `docsync prune` giving the disk back (issue 16).
@Suite("Retention and pruning")
struct RetentionTests {
  @Test(
    "--keep 0 and prune on each device: a 100 MiB file written three times and deleted leaves no trace",
    .needs(), .docsyncOnly)
  func pruneGivesBackTheSpaceOfADeletedFile() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("small.md"), "a small document\n")
      try library.sync(a, b)
      let before = try sizes(library, a, b)
      for round in 1...3 {
        try check([
          "sh", "-c", "head -c 104857600 /dev/urandom > \"$1\"", "sh", a.path("big.bin"),
        ])
        try library.sync(a, b)
        #expect(try describe(b.path("big.bin")).size == 104_857_600, "round \(round)")
      }
      let written = try sizes(library, a, b)
      try check(["rm", a.path("big.bin")])
      try library.sync(a, b)
      // Three writes, or more versions when a slow write had a quiet moment in the middle.
      let earlier = try historyNames(b, of: "big.bin").count
      #expect(earlier >= 3)
      let deleted = try sizes(library, a, b)

      let shown = try docsync(a, ["retention", a.mountPoint, "--keep", "0"])
      #expect(shown.contains("keep no earlier version"), "\(shown)")
      #expect(
        try docsync(b, ["retention", b.mountPoint])
          == shown.replacing(a.mountPoint, with: b.mountPoint))
      let prunedA = try docsync(a, ["prune", a.mountPoint])
      let prunedB = try docsync(b, ["prune", b.mountPoint])
      let after = try sizes(library, a, b)
      print(
        """
        retention measurement (KiB: hub, laptop state, desktop state):
          before        \(before)
          written x3    \(written)
          deleted       \(deleted)
          pruned        \(after)
        \(prunedA)\(prunedB)
        """)
      #expect(prunedA.hasPrefix("pruned \(earlier) earlier versions and "), "\(prunedA)")
      for (start, end) in zip(before, after) {
        #expect(end <= start + 5 * 1024, "before \(before), after \(after)")
      }
      for device in [a, b] {
        // The kernel keeps a `.history` entry for up to a second (as `.versions` entries).
        var gone = false
        for _ in 0..<30 where !gone {
          gone = !FileManager.default.fileExists(atPath: device.path(".history/big.bin"))
          if !gone { usleep(100_000) }
        }
        #expect(
          gone,
          "\((try? historyNames(device, of: "big.bin")) ?? [])\n\(device.logTail())")
        #expect(try read(device.path("small.md")) == "a small document\n")
      }
      // The library still syncs after the prune.
      try write(b.path("small.md"), "edited after the prune\n")
      try library.sync(b, a)
      #expect(try read(a.path("small.md")) == "edited after the prune\n")
    }
  }
}

extension RetentionTests {
  @Test(
    "A device offline across a prune comes back with its edit: a conflict at worst, nothing lost",
    .needs(), .docsyncOnly)
  func offlineAcrossAPruneLosesNothing() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("plan.md"), "the base\n")
      try library.sync(a, b)
      try b.pause()
      try write(b.path("plan.md"), "desktop's offline edit\n")
      // A paused mount still records its versions (they wait in its outbox).
      usleep(1_000_000)
      let paused = try run(
        b.asOwner([try MountFixture.docsyncBinary(), "prune", b.mountPoint]), env: b.environment)
      #expect(paused.status == 1, "\(paused)")
      for edit in 1...3 {
        try write(a.path("plan.md"), "laptop's edit \(edit)\n")
        try a.sync()
      }
      _ = try docsync(a, ["retention", a.mountPoint, "--keep", "0"])
      // The base that the desktop's edit follows goes from the hub and from the laptop.
      let pruned = try docsync(a, ["prune", a.mountPoint])
      #expect(pruned.hasPrefix("pruned 3 earlier versions"), "\(pruned)")

      try b.resume()
      try library.sync(b, a, b)
      let expected: Set = ["laptop's edit 3\n", "desktop's offline edit\n"]
      for device in [a, b] {
        #expect(Set(try currentAndVersions(device, "plan.md")) == expected, "\(device.name)")
      }
      // Pruning again keeps both heads: the current version and the conflict version.
      _ = try docsync(b, ["prune", b.mountPoint])
      _ = try docsync(a, ["prune", a.mountPoint])
      try library.sync(a, b)
      for device in [a, b] {
        #expect(Set(try currentAndVersions(device, "plan.md")) == expected, "\(device.name)")
      }
    }
  }
}

/// `du -sk` of the hub's folder (0 for a PostgreSQL hub, whose tables give space back to
/// PostgreSQL's own reuse rather than to the file system) and of each device's state folder.
private func sizes(_ library: Library, _ devices: Device...) throws -> [Int] {
  let onFile = !library.hub.hasPrefix("postgres")
  let folders =
    (onFile ? [(library.hub as NSString).deletingLastPathComponent] : []) + devices.map(\.state)
  return try (onFile ? [] : [0])
    + folders.map { folder in
      let output = try check(["du", "-sk", folder]).stdout
      return Int(output.split(separator: "\t").first ?? "") ?? -1
    }
}

/// A docsync command's standard output; it must succeed.
private func docsync(_ device: Device, _ arguments: [String]) throws -> String {
  try check(
    device.asOwner([try MountFixture.docsyncBinary()] + arguments), env: device.environment,
    timeout: .seconds(600)
  ).stdout
}
