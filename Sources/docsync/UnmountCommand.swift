import ArgumentParser
import Glibc

/// `docsync unmount`: unmounts and waits until the mount process has flushed and exited.
struct UnmountCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "unmount", abstract: "Unmount a docsync mount, after flushing it.")

  @Argument(help: "The mount point.")
  var mountPoint: String

  func run() throws {
    // A mount whose process died can still be unmounted: that is the way out of it.
    let target = try mountPointPath(mountPoint).target
    guard let record = MountTable.record(at: target), let state = record.docsyncState else {
      throw CommandFailure("\(target) is not a docsync mount")
    }
    let pid = readTextFile(state + "/docsync.pid").flatMap {
      Int32($0.trimmingCharacters(in: " \n"))
    }
    // A killed daemon that cannot exit keeps the mount busy with its own waiting call.
    let stuck = StuckDaemon.holding(stateFolder: state)
    try stuck?.end(stateFolder: state)
    let result = runProgram(["fusermount3", "-u", target])
    guard result.status == 0 else {
      if result.errorOutput.contains("busy") {
        throw CommandFailure("\(target) is busy: close the files and shells that use it first")
      }
      let reason =
        result.errorOutput.split(separator: "\n").last.map(String.init) ?? "unknown error"
      throw CommandFailure("cannot unmount \(target): \(reason)")
    }
    // A stuck daemon has let go of its state once ended; nobody may reap it here.
    guard let pid, stuck == nil else { return }
    // The mount process flushes its state after the kernel lets go; wait for it to finish.
    for _ in 0..<600 {
      if kill(pid, 0) != 0 && errno == ESRCH { return }
      usleep(100_000)
    }
    throw CommandFailure("the mount process \(pid) did not stop after unmounting \(target)")
  }
}

extension String {
  func trimmingCharacters(in set: String) -> String {
    let characters = Set(set)
    var view = Substring(self)
    while let first = view.first, characters.contains(first) { view = view.dropFirst() }
    while let last = view.last, characters.contains(last) { view = view.dropLast() }
    return String(view)
  }
}
