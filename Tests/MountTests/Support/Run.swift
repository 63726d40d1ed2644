import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// What a finished subprocess left behind.
struct RunResult: Sendable, CustomStringConvertible {
  var argv: [String]
  var status: Int32
  var stdout: String
  var stderr: String
  var timedOut: Bool

  var description: String {
    "`\(argv.joined(separator: " "))` exited \(status)\(timedOut ? " (timed out)" : "")"
      + "\nstdout: \(stdout.prefix(2000))\nstderr: \(stderr.prefix(2000))"
  }
}

struct RunError: Error, CustomStringConvertible {
  var description: String
}

/// Runs `argv` (argv[0] looked up in PATH) and waits at most `timeout`.
///
/// stdout and stderr go to files rather than pipes: `docsync mount` leaves a daemon behind,
/// and a daemon that inherits a pipe would keep a reader waiting for EOF forever.
@discardableResult
func run(
  _ argv: [String], cwd: String? = nil, env: [String: String] = [:], stdin: String? = nil,
  timeout: Duration = .seconds(120)
) throws -> RunResult {
  precondition(!argv.isEmpty)
  let io = FileManager.default.temporaryDirectory
    .appendingPathComponent("docsync-run-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: io, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: io) }
  let outURL = io.appendingPathComponent("stdout")
  let errURL = io.appendingPathComponent("stderr")
  let inURL = io.appendingPathComponent("stdin")
  _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
  _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
  _ = FileManager.default.createFile(atPath: inURL.path, contents: Data((stdin ?? "").utf8))

  let process = Process()
  // env resolves argv[0] in PATH as a shell would; Process wants an absolute path.
  process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
  process.arguments = argv
  if let cwd { process.currentDirectoryURL = URL(fileURLWithPath: cwd) }
  process.environment = ProcessInfo.processInfo.environment.merging(env) { _, new in new }
  let outHandle = try FileHandle(forWritingTo: outURL)
  let errHandle = try FileHandle(forWritingTo: errURL)
  let inHandle = try FileHandle(forReadingFrom: inURL)
  defer {
    try? outHandle.close()
    try? errHandle.close()
    try? inHandle.close()
  }
  process.standardOutput = outHandle
  process.standardError = errHandle
  process.standardInput = inHandle

  let finished = DispatchSemaphore(value: 0)
  process.terminationHandler = { _ in finished.signal() }
  try process.run()
  let (seconds, attoseconds) = timeout.components
  let deadline =
    DispatchTime.now()
    + .milliseconds(Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
  var timedOut = false
  if finished.wait(timeout: deadline) == .timedOut {
    timedOut = true
    kill(process.processIdentifier, SIGKILL)
    finished.wait()
  }
  let stdout = String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self)
  let stderr = String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self)
  return RunResult(
    argv: argv, status: timedOut ? -1 : process.terminationStatus, stdout: stdout,
    stderr: stderr, timedOut: timedOut)
}

/// Runs `argv` and throws unless it exits 0.
@discardableResult
func check(
  _ argv: [String], cwd: String? = nil, env: [String: String] = [:], stdin: String? = nil,
  timeout: Duration = .seconds(120)
) throws -> RunResult {
  let result = try run(argv, cwd: cwd, env: env, stdin: stdin, timeout: timeout)
  guard result.status == 0, !result.timedOut else { throw RunError(description: "\(result)") }
  return result
}
