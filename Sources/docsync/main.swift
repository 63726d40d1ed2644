import ArgumentParser
import FuseMount
import Glibc
import Logging

// A mount's announcing process (AnnouncerHelper), which the daemon starts from this executable:
// it parses nothing and logs nothing.
if commandLineArguments().first == AnnouncerHelper.argument { AnnouncerHelper.run() }

// Logs go to stderr, unbuffered, so that a daemon's log file is current when someone reads it;
// a daemon sends them to STATE/docsync.log from before it makes the engine (LogOutput).
// The level is read when a logger is made, so `--log-level` reaches every logger that the
// mount makes after parsing its options.
LoggingSystem.bootstrap { label in
  var handler = StreamLogHandler(label: label, stream: LogOutput())
  handler.logLevel = logLevelSetting.withLock { $0 }
  return handler
}

// Exit statuses are part of the contract (DESIGN.md): 0 success, 1 a one-line error, 2 wrong
// usage. ArgumentParser's default for wrong usage is 64, so the parse is done here.
/// The arguments after the program's name. Swift finds them on Linux by walking back from
/// `environ` to the process's initial stack; a preloaded library that sets a variable before
/// `main` moves `environ` to the heap, and the runtime then reports none (observed with
/// libfaketime, which sets `FAKETIME_SHARED`). The kernel's copy is read then.
func commandLineArguments() -> [String] {
  if !CommandLine.arguments.isEmpty { return Array(CommandLine.arguments.dropFirst()) }
  let fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return [] }
  defer { close(fd) }
  let words = readToEnd(fd).split(separator: 0, omittingEmptySubsequences: false).dropLast()
  return words.dropFirst().map { String(decoding: $0, as: UTF8.self) }
}

do {
  var command = try Docsync.parseAsRoot(commandLineArguments())
  try command.run()
} catch let error as CommandFailure {
  writeText("docsync: \(error.message)\n", to: 2)
  exit(1)
} catch {
  let code = Docsync.exitCode(for: error)
  if code == .validationFailure {
    writeText(Docsync.fullMessage(for: error) + "\n", to: 2)
    exit(2)
  }
  Docsync.exit(withError: error)
}
