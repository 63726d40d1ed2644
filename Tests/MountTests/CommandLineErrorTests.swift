import Foundation
import MountHarness
import Testing

/// Bad input to `docsync mount`: exit 1 and one line on stderr that names the problem, or exit
/// 2 for wrong usage. Nothing may be left mounted.
@Suite("docsync command-line errors", .docsyncOnly)
struct CommandLineErrorTests {
  /// Runs docsync and checks the contract for an error: `status`, and exactly one stderr line
  /// starting with `docsync: ` that contains one of `keywords`.
  private func expectError(
    _ arguments: [String], status: Int32 = 1, keywords: [String], env: [String: String] = [:],
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let result = try run(
      [try MountFixture.docsyncBinary()] + arguments, env: env, timeout: .seconds(60))
    #expect(result.status == status, "\(result)", sourceLocation: sourceLocation)
    let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
      .filter { !$0.isEmpty }
    #expect(lines.count == 1, "want one line on stderr: \(result)", sourceLocation: sourceLocation)
    if let line = lines.first {
      #expect(line.hasPrefix("docsync: "), "\(line)", sourceLocation: sourceLocation)
      #expect(
        keywords.contains { line.localizedCaseInsensitiveContains($0) },
        "\(line) names none of \(keywords)", sourceLocation: sourceLocation)
    }
  }

  @Test(.needs())
  func mountPointThatDoesNotExist() throws {
    try MountFixture.withScratch { m throws in
      try expectError(
        ["mount", m.scratch("no-such-folder"), "--state", m.state], keywords: ["does not exist"])
      #expect(!MountFixture.mountedPoints().contains { $0.hasPrefix(m.base + "/") })
    }
  }

  @Test(.needs())
  func mountPointThatIsAFile() throws {
    try MountFixture.withScratch { m throws in
      try write(m.scratch("a-file"), "not a folder\n")
      try expectError(
        ["mount", m.scratch("a-file"), "--state", m.state], keywords: ["not a directory"])
    }
  }

  @Test(.needs())
  func mountPointAlreadyMounted() throws {
    try MountFixture.withMount { m throws in
      try FileManager.default.createDirectory(
        atPath: m.scratch("state2"), withIntermediateDirectories: true)
      try expectError(
        ["mount", m.mountPoint, "--state", m.scratch("state2")], keywords: ["already mounted"])
      // The failed second mount must not have disturbed the first.
      try write(m.path("still-works.txt"), "yes\n")
      #expect(try read(m.path("still-works.txt")) == "yes\n")
    }
  }

  @Test(.needs())
  func stateFolderNotWritable() throws {
    try MountFixture.withScratch { m throws in
      // A path under a regular file cannot be created even by root, unlike a chmod 0 folder.
      try write(m.scratch("blocker"), "a file\n")
      try expectError(
        ["mount", m.mountPoint, "--state", m.scratch("blocker/state")], keywords: ["not writable"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }

  @Test(.needs())
  func fuseDeviceMissing() throws {
    try MountFixture.withScratch { m throws in
      // The binary honours DOCSYNC_FUSE_DEVICE for exactly this test: removing the real
      // /dev/fuse would break every other mount on the machine.
      try expectError(
        ["mount", m.mountPoint, "--state", m.state], keywords: ["/dev/fuse", "/nonexistent/fuse"],
        env: ["DOCSYNC_FUSE_DEVICE": "/nonexistent/fuse"])
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }

  @Test(.needs(fuse: false))
  func unknownSubcommandIsAUsageError() throws {
    let result = try run([try MountFixture.docsyncBinary(), "frobnicate"])
    #expect(result.status == 2, "\(result)")
  }

  @Test(.needs(fuse: false))
  func unknownFlagIsAUsageError() throws {
    try MountFixture.withScratch { m throws in
      let result = try run(
        [try MountFixture.docsyncBinary(), "mount", m.mountPoint, "--no-such-flag"])
      #expect(result.status == 2, "\(result)")
      #expect(!MountFixture.mountedPoints().contains(m.mountPoint))
    }
  }
}
