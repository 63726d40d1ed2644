import ArgumentParser
import Glibc
import Logging

// Logs go to stderr: unbuffered, so a daemon's log file is current when someone reads it (the
// daemon sends stdout and stderr to STATE/docsync.log).
LoggingSystem.bootstrap(StreamLogHandler.standardError)

// Exit statuses are part of the contract (DESIGN.md): 0 success, 1 a one-line error, 2 wrong
// usage. ArgumentParser's default for wrong usage is 64, so the parse is done here.
do {
  var command = try Docsync.parseAsRoot()
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
