import Foundation
import MountHarness
import Testing

/// `.versions/<path>/merged<ext>` and `base<ext>` for a text document in conflict: the same
/// bytes on every device, `cp` of the merge resolves, and `rm` of the views changes nothing.
@Suite("Merged and base views of a text document in conflict")
struct MergeViewTests {
  static let base = "title\none\ntwo\nthree\nfour\nend\n"

  /// `a` and `b` change `plan.md` (synced as `base`) without seeing each other's change:
  /// `b` is paused while `a` edits and pushes, then `b` edits later and resumes.
  func conflict(
    _ library: Library, _ a: Device, _ b: Device, laptop: String, desktop: String,
    name: String = "plan.md", base: String = Self.base
  ) throws {
    try write(a.path(name), base)
    try library.sync(a, b)
    try b.pause()
    try write(a.path(name), laptop)
    try a.sync()
    usleep(20_000)
    try write(b.path(name), desktop)
    try b.resume()
    try library.sync(a, b, a)
  }

  @Test(
    "Edits to different lines: merged holds both, base the ancestor; cp resolves on both",
    .needs("cp", "rm", "getfattr"), .docsyncOnly)
  func editsToDifferentLinesMergeCleanly() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try conflict(
        library, a, b, laptop: "title\nONE by laptop\ntwo\nthree\nfour\nend\n",
        desktop: "title\none\ntwo\nthree\nFOUR by desktop\nend\n")
      let both = "title\nONE by laptop\ntwo\nthree\nFOUR by desktop\nend\n"
      for device in [a, b] {
        let names = try FileManager.default.contentsOfDirectory(
          atPath: device.path(".versions/plan.md"))
        #expect(names.filter(isViewName).sorted() == ["base.md", "merged.md"], "\(names)")
        #expect(try read(device.path(".versions/plan.md/merged.md")) == both)
        #expect(try read(device.path(".versions/plan.md/base.md")) == Self.base)
        let merged = try describe(device.path(".versions/plan.md/merged.md"))
        #expect(merged.mode & 0o222 == 0, "merged.md is writable: \(merged)")
        // The document says it is in conflict, for file managers and prompts.
        #expect(
          try getUserXattr(device.path("plan.md"), "user.docsync.conflicts") == Array("1".utf8))
      }
      // Writing into a view is refused; removing one changes nothing.
      let refused = try run(
        ["sh", "-c", "echo x > .versions/plan.md/merged.md"], cwd: a.mountPoint)
      #expect(refused.status != 0)
      try check(["rm", "-f", ".versions/plan.md/merged.md"], cwd: a.mountPoint)
      #expect(try read(a.path(".versions/plan.md/merged.md")) == both)

      try check(["cp", ".versions/plan.md/merged.md", "plan.md"], cwd: a.mountPoint)
      try library.sync(a, b, a)
      for device in [a, b] {
        #expect(try read(device.path("plan.md")) == both, "\(device.name)")
        #expect(try findVersions(device).isEmpty, "\(device.name)")
        #expect(try device.status().conflicts.isEmpty, "\(device.name)")
        let attribute = try run(
          ["getfattr", "-n", "user.docsync.conflicts", "plan.md"], cwd: device.mountPoint)
        #expect(attribute.status != 0, "still marked in conflict: \(attribute)")
      }
    }
  }

  @Test(
    "Overlapping edits: markers name both devices, the version stays, rm -r still keeps current",
    .needs("rm"), .docsyncOnly)
  func overlappingEditsShowMarkers() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try conflict(
        library, a, b, laptop: "title\none\nlaptop's two\nthree\nfour\nend\n",
        desktop: "title\none\ndesktop's two\nthree\nfour\nend\n")
      let merged = try read(a.path(".versions/plan.md/merged.md"))
      #expect(try read(b.path(".versions/plan.md/merged.md")) == merged)
      for marker in ["<<<<<<< current (desktop, ", "||||||| base (", "=======\n", ">>>>>>> "] {
        #expect(merged.contains(marker), "\(marker) missing in \(merged)")
      }
      #expect(merged.contains("laptop's two") && merged.contains("desktop's two"))
      #expect(merged.contains("_laptop_") && merged.contains("(laptop, "), "\(merged)")
      #expect(try versionNames(a, of: "plan.md").count == 1)
      // rm -r removes the versions (resolving), then the views (ignored), then the folder.
      try check(["rm", "-r", ".versions/plan.md"], cwd: a.mountPoint)
      try library.sync(a, b, a)
      for device in [a, b] {
        #expect(try read(device.path("plan.md")) == "title\none\ndesktop's two\nthree\nfour\nend\n")
        #expect(try findVersions(device).isEmpty, "\(device.name)")
      }
    }
  }

  @Test(
    "A binary document in conflict gets neither view; rm of every entry succeeds",
    .needs("sh", "rm"), .docsyncOnly)
  func binaryDocumentsGetNoViews() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try conflict(
        library, a, b, laptop: "laptop\u{0}binary", desktop: "desktop\u{0}binary", name: "data.bin",
        base: "base\u{0}binary")
      let names = try FileManager.default.contentsOfDirectory(atPath: a.path(".versions/data.bin"))
      #expect(names.count == 1 && names.filter(isViewName).isEmpty, "\(names)")

      // A text conflict: `rm .versions/plan.md/*` removes the version, then the views.
      try conflict(
        library, a, b, laptop: "title\nlaptop\n", desktop: "title\ndesktop\n")
      try check(["sh", "-c", "rm .versions/plan.md/*"], cwd: a.mountPoint)
      try library.sync(a, b, a)
      #expect(try findVersions(a).filter { $0.contains("plan.md") }.isEmpty)
    }
  }
}
