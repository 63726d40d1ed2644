import SystemPackage

/// What a check body works with: the subject, its scratch folder, and operations that turn an
/// unexpected error into a ``ConformanceFailure`` naming the operation.
///
/// Paths given to the helpers are relative to the scratch folder; a path that starts with `/`
/// is relative to the subject root instead (for the `.versions` checks).
struct CheckContext {
  let subject: any FileSystemSubject
  let scratch: String

  func path(_ name: String) -> String {
    if name.utf8.first == UInt8(ascii: "/") { return String(name.dropFirst()) }
    return name.isEmpty ? scratch : scratch + "/" + name
  }

  /// Runs one subject operation; an error becomes a failure that says which operation it was.
  func step<T>(_ what: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let error as Errno {
      throw ConformanceFailure("\(what()): unexpected \(describe(error))", errno: error)
    }
  }

  // MARK: Expectations

  func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw ConformanceFailure(message()) }
  }

  func expectEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: @autoclosure () -> String)
    throws
  {
    if actual != expected {
      throw ConformanceFailure(
        "\(what()): expected \(abbreviated(expected)), got \(abbreviated(actual))")
    }
  }

  /// Expects `body` to fail with one of `errors`.
  func expectError(
    _ errors: [Errno], _ what: @autoclosure () -> String, _ body: () throws -> Void
  ) throws {
    let expected = errors.map(describe).joined(separator: " or ")
    do {
      try body()
    } catch let error as Errno {
      if errors.contains(error) { return }
      throw ConformanceFailure("\(what()): expected \(expected), got \(describe(error))")
    } catch let error as ConformanceFailure {
      if let errno = error.errno, errors.contains(errno) { return }
      throw ConformanceFailure("\(what()): expected \(expected), got: \(error.message)")
    }
    throw ConformanceFailure("\(what()): expected \(expected), but it succeeded")
  }

  func expectMissing(_ name: String) throws {
    try expectError([.noSuchFileOrDirectory], "lstat \(name) after it was removed") {
      _ = try subject.status(path(name), followSymlinks: false)
    }
  }

  // MARK: Operations

  func stat(_ name: String) throws -> FileStatus {
    try step("stat \(name)") { try subject.status(path(name), followSymlinks: true) }
  }

  func lstat(_ name: String) throws -> FileStatus {
    try step("lstat \(name)") { try subject.status(path(name), followSymlinks: false) }
  }

  func mkdir(_ name: String, mode: UInt32 = 0o755) throws {
    try step("mkdir \(name)") { try subject.makeDirectory(path(name), mode: mode) }
  }

  func rmdir(_ name: String) throws {
    try step("rmdir \(name)") { try subject.removeDirectory(path(name)) }
  }

  func unlink(_ name: String) throws {
    try step("unlink \(name)") { try subject.removeFile(path(name)) }
  }

  func rename(_ source: String, _ destination: String, flags: RenameFlags = []) throws {
    try step("rename \(source) to \(destination)") {
      try subject.rename(path(source), to: path(destination), flags: flags)
    }
  }

  func open(_ name: String, _ options: OpenOptions, mode: UInt32 = 0o644) throws -> OpenFile {
    try step("open \(name)") { try subject.open(path(name), options, mode: mode) }
  }

  func close(_ file: OpenFile) throws {
    try step("close") { try subject.close(file) }
  }

  func read(_ file: OpenFile, at offset: Int64 = 0, count: Int) throws -> [UInt8] {
    try step("read \(count) bytes at \(offset)") {
      try subject.read(file, at: offset, count: count)
    }
  }

  func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64 = 0) throws {
    let written = try step("write \(bytes.count) bytes at \(offset)") {
      try subject.write(file, bytes, at: offset)
    }
    try expectEqual(written, bytes.count, "bytes written at \(offset)")
  }

  /// Creates (or truncates) `name` and writes `bytes` into it.
  func writeFile(_ name: String, _ bytes: [UInt8], mode: UInt32 = 0o644) throws {
    let file = try open(name, [.write, .create, .truncate], mode: mode)
    try write(file, bytes)
    try close(file)
  }

  func writeFile(_ name: String, _ text: String, mode: UInt32 = 0o644) throws {
    try writeFile(name, Array(text.utf8), mode: mode)
  }

  /// The whole content of `name`, read through a new open.
  func readFile(_ name: String) throws -> [UInt8] {
    let file = try open(name, .read)
    defer { try? subject.close(file) }
    var content: [UInt8] = []
    while true {
      let chunk = try read(file, at: Int64(content.count), count: 1 << 16)
      if chunk.isEmpty { break }
      content += chunk
    }
    return content
  }

  func expectContent(_ name: String, _ expected: [UInt8]) throws {
    let actual = try readFile(name)
    if actual != expected {
      let common = min(actual.count, expected.count)
      let at = (0..<common).first { actual[$0] != expected[$0] } ?? common
      throw ConformanceFailure(
        "content of \(name): expected \(expected.count) bytes, got \(actual.count); first"
          + " difference at byte \(at)")
    }
  }

  func expectContent(_ name: String, _ text: String) throws {
    try expectContent(name, Array(text.utf8))
  }

  /// Every entry of a listing, read in batches of `batch`.
  func list(_ name: String, batch: Int = 64) throws -> [DirectoryEntry] {
    let directory = try step("opendir \(name)") { try subject.openDirectory(path(name)) }
    defer { try? subject.close(directory) }
    var entries: [DirectoryEntry] = []
    while true {
      let next = try step("readdir \(name)") {
        try subject.readDirectory(directory, maximumCount: batch)
      }
      if next.isEmpty { return entries }
      entries += next
    }
  }

  /// The names in a listing other than `.` and `..`, as bytes, sorted.
  func names(_ name: String) throws -> [[UInt8]] {
    try list(name).map(\.name).filter { !isDotOrDotDot($0) }.map { Array($0.utf8) }
      .sorted { $0.lexicographicallyPrecedes($1) }
  }

  func expectNames(_ name: String, _ expected: [String]) throws {
    let actual = try names(name)
    let wanted = expected.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
    if actual != wanted {
      let show = { (names: [[UInt8]]) in
        names.map { String(decoding: $0, as: UTF8.self).debugDescription }.joined(separator: ", ")
      }
      throw ConformanceFailure(
        "listing of \(name.isEmpty ? "scratch" : name): expected [\(show(wanted))], got [\(show(actual))]"
      )
    }
  }
}

/// The description of `value`, cut to 200 characters so that a failure stays readable.
func abbreviated(_ value: some Any) -> String {
  let text = String(describing: value)
  return text.count <= 200 ? text : text.prefix(200) + "… (\(text.count) characters)"
}

/// Bytes that differ from position to position, so that a misplaced block shows.
func pattern(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
  (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 8) &+ Int(seed)) }
}
