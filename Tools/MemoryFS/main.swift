import FuseLowLevel
import Glibc

// memoryfs-example MOUNTPOINT [--debug]: serves an in-memory file system until unmounted or
// signalled, then unmounts. Prints "ready" once mounted, for tests that wait on it.

/// stderr as a file descriptor: Glibc's `stderr` is a global var that Swift 6 refuses to share.
func complain(_ message: String) {
  let line = message + "\n"
  _ = line.withCString { write(2, $0, strlen($0)) }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
  complain("usage: memoryfs-example MOUNTPOINT [--debug]")
  exit(2)
}
let options = SessionOptions(
  mountPoint: arguments[1], fsName: "memoryfs", debug: arguments.contains("--debug"))
do {
  let session = try Session(fileSystem: MemoryFileSystem(scratch: "/var/tmp"), options: options)
  try session.mount()
  try session.installSignalHandlers()
  print("ready")
  fflush(nil)
  let end = try session.run()
  session.unmount()
  print("ended: \(end)")
  fflush(nil)
} catch {
  complain("memoryfs-example: \(error)")
  exit(1)
}
