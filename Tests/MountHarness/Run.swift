import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// What a finished subprocess left behind.
public struct RunResult: Sendable, CustomStringConvertible {
  public var argv: [String]
  public var status: Int32
  public var stdout: String
  public var stderr: String
  public var timedOut: Bool

  public var description: String {
    "`\(argv.joined(separator: " "))` exited \(status)\(timedOut ? " (timed out)" : "")"
      + "\nstdout: \(stdout.prefix(2000))\nstderr: \(stderr.prefix(2000))"
  }
}

public struct RunError: Error, CustomStringConvertible {
  public var description: String
}

/// Runs `argv` (argv[0] looked up in PATH) and waits at most `timeout`; on timeout the whole
/// process group is killed.
///
/// This is posix_spawn and waitpid rather than Foundation's Process: Process learns of an exit
/// through a descriptor the child inherits, so it never sees `docsync mount` exit while the
/// daemon it started still holds that descriptor (observed: the test run hung on a zombie).
/// For the same reason stdout and stderr go to files, not pipes that a daemon would keep open.
@discardableResult
public func run(
  _ argv: [String], cwd: String? = nil, env: [String: String] = [:], stdin: String? = nil,
  timeout: Duration = .seconds(120)
) throws -> RunResult {
  precondition(!argv.isEmpty)
  let io = FileManager.default.temporaryDirectory
    .appendingPathComponent("docsync-run-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: io, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: io) }
  let outPath = io.appendingPathComponent("stdout").path
  let errPath = io.appendingPathComponent("stderr").path
  let inPath = io.appendingPathComponent("stdin").path
  try Data((stdin ?? "").utf8).write(to: URL(fileURLWithPath: inPath))

  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
  posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
  posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
  // Tests run in parallel: a descriptor another test has open in its mount at this moment must
  // not live on in this child, or that mount stays busy for as long as the child runs.
  closeDescriptorsAboveStderr(&actions)

  var attributes = posix_spawnattr_t()
  posix_spawnattr_init(&attributes)
  defer { posix_spawnattr_destroy(&attributes) }
  // Own process group, so a timeout kills what the child started too; default signal
  // dispositions and mask, so the child does not inherit the test runner's ignored SIGPIPE.
  var defaults = sigset_t()
  sigfillset(&defaults)
  var empty = sigset_t()
  sigemptyset(&empty)
  posix_spawnattr_setsigdefault(&attributes, &defaults)
  posix_spawnattr_setsigmask(&attributes, &empty)
  posix_spawnattr_setpgroup(&attributes, 0)
  posix_spawnattr_setflags(
    &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

  // env -C changes folder before it resolves argv[0] in PATH, as a shell would.
  let fullArgv = ["/usr/bin/env"] + (cwd.map { ["-C", $0] } ?? []) + argv
  let environment = ProcessInfo.processInfo.environment.merging(env) { _, new in new }
    .map { "\($0.key)=\($0.value)" }
  let cArgv = fullArgv.map { strdup($0) } + [nil]
  let cEnv = environment.map { strdup($0) } + [nil]
  defer { (cArgv + cEnv).forEach { free($0) } }

  var pid = pid_t()
  let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, &attributes, cArgv, cEnv)
  guard spawned == 0 else {
    throw RunError(description: "posix_spawn \(argv): \(String(cString: strerror(spawned)))")
  }

  let deadline = ContinuousClock.now + timeout
  var status: Int32 = 0
  var timedOut = false
  while true {
    let waited = waitpid(pid, &status, WNOHANG)
    if waited == pid { break }
    if waited < 0 && errno != EINTR {
      throw RunError(description: "waitpid \(argv): \(String(cString: strerror(errno)))")
    }
    if ContinuousClock.now >= deadline {
      timedOut = true
      kill(-pid, SIGKILL)
      while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
      break
    }
    usleep(5_000)
  }
  // WIFEXITED and friends are macros Swift does not import.
  let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
  let stdout = String(
    decoding: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(), as: UTF8.self)
  let stderr = String(
    decoding: (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data(), as: UTF8.self)
  return RunResult(
    argv: argv, status: timedOut ? -1 : exitStatus, stdout: stdout, stderr: stderr,
    timedOut: timedOut)
}

/// Runs `argv` and throws unless it exits 0.
@discardableResult
public func check(
  _ argv: [String], cwd: String? = nil, env: [String: String] = [:], stdin: String? = nil,
  timeout: Duration = .seconds(120)
) throws -> RunResult {
  let result = try run(argv, cwd: cwd, env: env, stdin: stdin, timeout: timeout)
  guard result.status == 0, !result.timedOut else { throw RunError(description: "\(result)") }
  return result
}

/// Makes a spawned child close every descriptor above stderr (glibc 2.34's
/// posix_spawn_file_actions_addclosefrom_np, looked up by name: Swift's Glibc module does not
/// declare it).
func closeDescriptorsAboveStderr(_ actions: inout posix_spawn_file_actions_t) {
  _ = addCloseFrom?(&actions, 3)
}

private let addCloseFrom:
  (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
    guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
    return unsafeBitCast(
      symbol,
      to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)
        .self)
  }()
