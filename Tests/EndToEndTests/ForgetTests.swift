import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `docsync forget`, and what the hub let go of reaching every device (issue 16).
@Suite("Forget and erasures")
struct ForgetTests {
  @Test(
    "forget removes a document, its .versions and .history everywhere and on the hub; an offline edit comes back",
    .needs("sqlite3", "psql"), .docsyncOnly)
  func forgetRemovesADocumentEverywhere() throws {
    try Library.with(programs: [hubReader()]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      let c = try library.device("tablet")
      // An earlier version (.history) and a conflict (.versions) on both devices.
      try write(a.path("secret.txt"), "the password\n")
      try library.sync(a, b, c)
      try makeConflicts(library, a, b, paths: ["secret.txt"])
      try write(a.path("plan.md"), "keep me\n")
      try library.sync(a, b, c)
      for device in [a, b] {
        #expect(try versionNames(device, of: "secret.txt").count == 1, "\(device.name)")
        #expect(try !historyNames(device, of: "secret.txt").isEmpty, "\(device.name)")
      }
      // The tablet goes offline and edits the document.
      try c.pause()
      try write(c.path("secret.txt"), "the tablet's offline edit\n")
      try AutomaticMergeTests().waitForRecordedEdits(c)

      // Without a terminal and without --yes: refused in one line, nothing forgotten.
      let refused = try run(
        a.asOwner([try MountFixture.docsyncBinary(), "forget", a.path("secret.txt")]),
        env: a.environment)
      #expect(refused.status == 1, "\(refused)")
      #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
      #expect(refused.stderr.contains("--yes"), "\(refused.stderr)")
      #expect(try read(a.path("secret.txt")) == edit("secret.txt", by: b))

      let forgot = try check(
        a.asOwner([try MountFixture.docsyncBinary(), "forget", "--yes", a.path("secret.txt")]),
        env: a.environment
      ).stdout
      #expect(forgot.hasPrefix("forgot \(a.mountPoint)/secret.txt: 4 versions"), "\(forgot)")
      try library.sync(b)
      for device in [a, b] {
        try expectGone(device, "secret.txt")
        #expect(try read(device.path("plan.md")) == "keep me\n")
      }
      // The hub holds no record and no content of it.
      let hub = HubBytes(library)
      #expect(try AutomaticMergeTests().hubRecords(library, of: "secret.txt").isEmpty)
      for content in ["the password\n", base("secret.txt"), edit("secret.txt", by: a)] {
        #expect(try hub.stored(content) == nil, "\(content)")
      }
      #expect(try hub.stored("keep me\n") != nil)

      // The tablet comes back: its edit is a new document everywhere, nothing else of the old.
      try c.resume()
      try library.sync(c, a, b, c)
      for device in [a, b, c] {
        #expect(try currentAndVersions(device, "secret.txt") == ["the tablet's offline edit\n"])
        #expect(!FileManager.default.fileExists(atPath: device.path(".history/secret.txt")))
      }
      #expect(try AutomaticMergeTests().hubRecords(library, of: "secret.txt").count == 1)
      // The library still syncs.
      try write(b.path("secret.txt"), "edited after the forget\n")
      try library.sync(b, a, c)
      #expect(try read(c.path("secret.txt")) == "edited after the forget\n")
    }
  }

  @Test(
    "forget of a 100 MiB document written twice gives the hub's and both devices' space back",
    .docsyncOnly)
  func forgetGivesTheSpaceBack() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("small.md"), "a small document\n")
      try library.sync(a, b)
      let before = try spaceUsed(library, a, b)
      for _ in 1...2 {
        try check([
          "sh", "-c", "head -c 104857600 /dev/urandom > \"$1\"", "sh", a.path("big.bin"),
        ])
        try library.sync(a, b)
      }
      let written = try spaceUsed(library, a, b)
      let started = ContinuousClock.now
      _ = try check(
        a.asOwner([try MountFixture.docsyncBinary(), "forget", "--yes", a.path("big.bin")]),
        env: a.environment)
      let forgetting = ContinuousClock.now - started
      try library.sync(b)
      let after = try spaceUsed(library, a, b)
      print(
        """
        forget measurement (KiB: hub, laptop state, desktop state):
          before       \(before)
          written x2   \(written)
          forgotten    \(after)   (docsync forget took \(forgetting))
        """)
      for (start, end) in zip(before, after) {
        #expect(end <= start + 5 * 1024, "before \(before), after \(after)")
      }
      for device in [a, b] { try expectGone(device, "big.bin") }
    }
  }

  @Test(
    "forget asks on a terminal, and forgets a deleted document named by its .history folder",
    .needs("script"), .docsyncOnly)
  func forgetAsksOnATerminal() throws {
    try Library.with(programs: ["script"]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("key.pem"), "first key\n")
      try a.sync()
      try write(a.path("key.pem"), "second key\n")
      try library.sync(a, b)
      try check(["rm", b.path("key.pem")])
      try library.sync(b, a)
      #expect(try historyNames(a, of: "key.pem").count == 2)
      // `script` gives the command a terminal; the answer comes on it.
      let command = [try MountFixture.docsyncBinary(), "forget", a.path(".history/key.pem")]
        .map { "'" + $0 + "'" }.joined(separator: " ")
      let declined = try run(
        a.asOwner(["script", "-qec", command, "/dev/null"]), env: a.environment, stdin: "n\n")
      #expect(declined.status == 1, "\(declined)")
      #expect(declined.stdout.contains("every version of it, on every device"), "\(declined)")
      #expect(declined.stdout.contains("nothing forgotten"), "\(declined)")
      #expect(try historyNames(a, of: "key.pem").count == 2)
      let accepted = try run(
        a.asOwner(["script", "-qec", command, "/dev/null"]), env: a.environment, stdin: "y\n")
      #expect(accepted.status == 0, "\(accepted)")
      #expect(accepted.stdout.contains("forgot \(a.mountPoint)/key.pem: 3 versions"), "\(accepted)")
      try library.sync(b)
      for device in [a, b] { try expectGone(device, "key.pem") }
    }
  }

  @Test(
    "forget of a folder removes every document under it, current and deleted, everywhere; the folders stay, empty",
    .needs("sqlite3", "psql"), .docsyncOnly)
  func forgetOfAFolder() throws {
    try Library.with(programs: [hubReader()]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try check(["mkdir", "-p", a.path("build/cache/deep")])
      try write(a.path("build/out.o"), "object one\n")
      try write(a.path("build/cache/deep/blob.bin"), "cached bytes\n")
      try write(a.path("build/gone.log"), "a log\n")
      try write(a.path("builder.md"), "a sibling whose name starts alike\n")
      try write(a.path("notes.md"), "keep me\n")
      try library.sync(a, b)
      try write(b.path("build/out.o"), "object two\n")
      try check(["rm", b.path("build/gone.log")])
      try library.sync(b, a)
      #expect(try historyNames(a, of: "build/gone.log").count == 1)

      // The whole library is refused in one line; so is a folder with nothing synced in it.
      try check(["mkdir", a.path("empty")])
      try library.sync(a)
      for target in [a.mountPoint, a.path("empty")] {
        let refused = try run(
          a.asOwner([try MountFixture.docsyncBinary(), "forget", "--yes", target]),
          env: a.environment)
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
      }

      let forgot = try check(
        a.asOwner([try MountFixture.docsyncBinary(), "forget", "--yes", a.path("build")]),
        env: a.environment
      ).stdout
      #expect(
        forgot.hasPrefix("forgot \(a.mountPoint)/build: 3 documents, 5 versions"), "\(forgot)")
      try library.sync(b)
      for device in [a, b] {
        for path in ["build/out.o", "build/cache/deep/blob.bin", "build/gone.log"] {
          try expectGone(device, path)
        }
        #expect(try read(device.path("builder.md")) == "a sibling whose name starts alike\n")
        #expect(try read(device.path("notes.md")) == "keep me\n")
        // The folders stay, empty.
        #expect(
          try FileManager.default.contentsOfDirectory(atPath: device.path("build")) == ["cache"])
        #expect(
          try FileManager.default.contentsOfDirectory(atPath: device.path("build/cache/deep"))
            .isEmpty)
      }
      for path in ["build/out.o", "build/cache/deep/blob.bin", "build/gone.log"] {
        #expect(try AutomaticMergeTests().hubRecords(library, of: path).isEmpty, "\(path)")
      }
      let hub = HubBytes(library)
      for content in ["object one\n", "object two\n", "cached bytes\n", "a log\n"] {
        #expect(try hub.stored(content) == nil, "\(content)")
      }
      #expect(try hub.stored("keep me\n") != nil)
      // The emptied folder is deleted everywhere as any folder is.
      try check(["rm", "-r", a.path("build")])
      try library.sync(a, b)
      #expect(!FileManager.default.fileExists(atPath: b.path("build")))
    }
  }

  @Test(
    "a version the hub released leaves another device's .history at its next sync",
    .docsyncOnly)
  func aReleasedVersionLeavesEveryHistory() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      for save in 1...3 {
        try write(a.path("plan.md"), "save \(save)\n")
        try a.sync()
      }
      try library.sync(a, b)
      #expect(try historyNames(b, of: "plan.md").count == 2)
      _ = try check(
        a.asOwner([try MountFixture.docsyncBinary(), "retention", a.mountPoint, "--keep", "0"]),
        env: a.environment)
      _ = try check(
        a.asOwner([try MountFixture.docsyncBinary(), "prune", a.mountPoint]), env: a.environment)
      try library.sync(b)
      try expectNoHistory(b, "plan.md")
      #expect(try read(b.path("plan.md")) == "save 3\n")
    }
  }

  /// `path`, its `.versions` and its `.history` entries are gone from `device` (the kernel keeps
  /// a virtual entry for up to a second).
  func expectGone(_ device: Device, _ path: String) throws {
    #expect(!FileManager.default.fileExists(atPath: device.path(path)), "\(device.name)")
    #expect(eventuallyGone(device.path(".versions/\(path)")), "\(device.name)")
    try expectNoHistory(device, path)
  }

  func expectNoHistory(_ device: Device, _ path: String) throws {
    #expect(
      eventuallyGone(device.path(".history/\(path)")),
      "\(device.name): \((try? historyNames(device, of: path)) ?? [])")
  }

  func eventuallyGone(_ path: String) -> Bool {
    for _ in 0..<30 {
      if !FileManager.default.fileExists(atPath: path) { return true }
      usleep(100_000)
    }
    return false
  }
}

/// The program that reads the library's hub from outside: `psql` or `sqlite3`.
private func hubReader() -> String {
  if case .postgres = LibraryHub.current { return "psql" }
  return "sqlite3"
}

/// `du -sk` of the hub's folder (0 for a PostgreSQL hub) and of each device's state folder.
private func spaceUsed(_ library: Library, _ devices: Device...) throws -> [Int] {
  let onFile = !library.hub.hasPrefix("postgres")
  let folders =
    (onFile ? [(library.hub as NSString).deletingLastPathComponent] : []) + devices.map(\.state)
  return try (onFile ? [] : [0])
    + folders.map { folder in
      let output = try check(["du", "-sk", folder]).stdout
      return Int(output.split(separator: "\t").first ?? "") ?? -1
    }
}
