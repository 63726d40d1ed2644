import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// README.md read as a newcomer reads it: its walkthrough is run as written, every command and
/// option it lists exists, its set-up names tools that exist, and every link between it and
/// the pages in docs/ leads somewhere.
@Suite("README's commands", .docsyncOnly)
struct ReadmeTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path

  static func readme() throws -> String {
    try String(contentsOfFile: root + "/README.md", encoding: .utf8)
  }

  /// The code blocks (between ``` lines) of the section under `heading`.
  static func codeBlocks(of text: String, under heading: String) -> [[String]] {
    var blocks: [[String]] = []
    var inSection = false
    var block: [String]?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
      if line.hasPrefix("#") && block == nil {
        inSection = line == heading
        continue
      }
      guard inSection else { continue }
      if line.hasPrefix("```") {
        if let finished = block { blocks.append(finished) }
        block = block == nil ? [] : nil
      } else if block != nil {
        block!.append(line)
      }
    }
    return blocks
  }

  /// What varies from run to run in the walkthrough's output: times, version ids and the home
  /// folder.
  static func normalized(_ lines: [String], home: String) -> [String] {
    lines.map { line in
      line.replacingOccurrences(of: home, with: "/home/me")
        .replacingOccurrences(
          of: #"\d{4}-\d\d-\d\dT\d\d[:.]\d\d[:.]\d\dZ"#, with: "TIME", options: .regularExpression
        )
        .replacingOccurrences(of: #"_[0-9a-f]{6}\."#, with: "_ID.", options: .regularExpression)
    }
  }

  @Test(.needs("sh", "mkdir", "cat", "ls", "cp", "find"))
  func theConflictWalkthroughRunsAsWritten() throws {
    try TestEnvironment.require(programs: ["sh", "mkdir", "cat", "ls", "cp", "find"])
    let block = try #require(
      Self.codeBlocks(of: try Self.readme(), under: "## A conflict in one minute").first)
    // A home of its own under the tests' root, where Tools/test clears what a failure leaves.
    _ = MountFixture.staleMountsCleaned  // makes the tests' root, open to every test user
    let home = "\(MountFixture.testsRoot)/\(getpid())-readme-\(UUID().uuidString.prefix(6))"
    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    let bin = home + "/bin"
    try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: false)
    try FileManager.default.createSymbolicLink(
      atPath: bin + "/docsync", withDestinationPath: try MountFixture.docsyncBinary())
    let environment = [
      "HOME": home, "PATH": bin + ":" + (TestEnvironment.variables["PATH"] ?? "/usr/bin:/bin"),
    ]
    defer {
      for mount in ["a", "b"] {
        _ = try? run([bin + "/docsync", "unmount", "\(home)/\(mount)"], env: environment)
      }
      try? FileManager.default.removeItem(atPath: home)
    }

    // Each `$ ` line is a command; the lines after it, up to the next, are what it prints.
    var steps: [(command: String, output: [String])] = []
    for line in block {
      if line.hasPrefix("$ ") {
        steps.append((String(line.dropFirst(2)), []))
      } else {
        try #require(!steps.isEmpty, "output before any command: \(line)")
        steps[steps.count - 1].output.append(line)
      }
    }
    #expect(steps.count >= 12, "\(steps)")
    var versionName: String?
    for step in steps {
      var command = step.command
      // The walkthrough's version name was made on another day by another run.
      if let name = versionName {
        command = command.replacingOccurrences(
          of: #"\d{4}-\d\d-\d\dT\d\d\.\d\d\.\d\dZ_laptop_[0-9a-f]{6}\.md"#, with: name,
          options: .regularExpression)
      }
      let result = try run(["sh", "-c", command], cwd: home, env: environment)
      #expect(result.status == 0, "\(command): \(result)")
      let printed = result.stdout.split(separator: "\n").map(String.init)
      if command.hasPrefix("ls ") {
        versionName = printed.first { $0.hasSuffix(".md") && $0.contains("_laptop_") }
      }
      // `ls` prints columns on a terminal, as README shows, and a name a line otherwise.
      let expected =
        command.hasPrefix("ls ")
        ? step.output.flatMap { $0.split(separator: " ").map(String.init) } : step.output
      #expect(
        Self.normalized(printed, home: home) == Self.normalized(expected, home: home),
        "\(command) printed:\n\(result.stdout)")
    }
    #expect(versionName != nil, "the walkthrough lists no version")
  }

  /// The words of a synopsis line that name options (`--hub`), without brackets.
  static func options(_ line: String) -> [String] {
    line.split(whereSeparator: { " []|".contains($0) }).map(String.init)
      .filter { $0.hasPrefix("--") }
  }

  @Test
  func everyCommandAndOptionListedExists() throws {
    let binary = try MountFixture.docsyncBinary()
    let listings = [
      try #require(Self.codeBlocks(of: try Self.readme(), under: "## Commands").first),
      try #require(
        Self.codeBlocks(
          of: try String(contentsOfFile: Self.root + "/docs/commands.md", encoding: .utf8),
          under: "# Commands"
        ).first),
    ]
    var checked = 0
    for listing in listings {
      var lastCommand: [String] = []
      for line in listing where !line.trimmingCharacters(in: .whitespaces).isEmpty {
        let words = line.split(separator: " ").map(String.init)
        var commands: [[String]]
        if words.first == "docsync" {
          let name = words[1]
          if name.hasPrefix("--") {
            commands = [[]]
          } else if name == "hub" {
            commands = words[2].split(separator: "|").map { ["hub", String($0)] }
          } else {
            commands = [[name]]
          }
          lastCommand = commands[0]
        } else {
          commands = [lastCommand]  // a continuation line of the command above
        }
        for command in commands {
          let help = try run([binary] + command + ["--help"])
          #expect(help.status == 0, "docsync \(command) --help: \(help)")
          for option in Self.options(line) where option != "--help" {
            if command.isEmpty {
              #expect(try check([binary, option]).status == 0, "docsync \(option)")
            } else {
              #expect(help.stdout.contains(option), "docsync \(command): no \(option)")
            }
            checked += 1
          }
        }
      }
    }
    #expect(checked > 30)
  }

  @Test
  func theSetUpNamesToolsThatExist() throws {
    let blocks = Self.codeBlocks(of: try Self.readme(), under: "## Set up")
    #expect(
      blocks.map { $0.joined(separator: "\n") } == [
        "Tools/package --install && mkdir -p ~/docsync && docsync mount ~/docsync", "Tools/test",
      ])
    for tool in ["Tools/package", "Tools/test"] {
      #expect(access(Self.root + "/" + tool, X_OK) == 0, "\(tool)")
    }
    let usage = try check(["bash", Self.root + "/Tools/package", "--help"])
    #expect(usage.stdout.contains("--install"), "\(usage)")
  }

  /// Every relative link in README.md and docs/*.md names a file that exists, and every page
  /// of docs/ is listed in docs/README.md.
  @Test
  func everyLinkLeadsToAPage() throws {
    let pages = try FileManager.default.contentsOfDirectory(atPath: Self.root + "/docs")
      .filter { $0.hasSuffix(".md") }.sorted()
    #expect(pages.count >= 10, "\(pages)")
    let files = ["README.md"] + pages.map { "docs/" + $0 }
    let link = try Regex(#"\]\(([^)#\s]+)(#[^)]*)?\)"#)
    var links = 0
    for file in files {
      let text = try String(contentsOfFile: Self.root + "/" + file, encoding: .utf8)
      let folder = (file as NSString).deletingLastPathComponent
      for match in text.matches(of: link) {
        let target = String(match.output[1].substring ?? "")
        if target.contains("://") { continue }
        let path = URL(fileURLWithPath: Self.root + "/" + folder + "/" + target)
          .standardizedFileURL.path
        #expect(FileManager.default.fileExists(atPath: path), "\(file) links \(target)")
        links += 1
      }
    }
    #expect(links > 20)
    let index = try String(contentsOfFile: Self.root + "/docs/README.md", encoding: .utf8)
    for page in pages where page != "README.md" {
      #expect(index.contains("](\(page))"), "docs/README.md does not list \(page)")
    }
    let readmeLines = try Self.readme().split(separator: "\n", omittingEmptySubsequences: false)
    #expect(readmeLines.count <= 250, "README.md has \(readmeLines.count) lines")
  }
}
