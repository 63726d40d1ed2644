import DocumentModel
import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `touch -d` with dates far from today (issue 45: 2514 killed the daemon): the mount stays up,
/// each time reads back as set or as the documented clamp (EpochNanoseconds: 1677-09-21 to
/// 2262-04-11; a file's times live on its working file, so the disk under the state folder
/// may clamp further, as it clamps its own files), and the device that receives the record
/// shows the file with the same time.
@Suite("Extreme times through the mount")
struct TouchDateTests {
  static let dates = [
    "May 30 01:53:03 UTC 2514", "1901-06-01 UTC", "1960-01-01 12:00:00.5 UTC",
    "1969-12-31 23:59:59.999999999 UTC", "2038-01-19 03:14:08 UTC", "2222-01-01 UTC",
    "2486-01-01 UTC", "2147483647-01-01 UTC", "0000-01-01 UTC",
  ]

  /// The time `date -d` gives for `text`, as seconds and nanoseconds.
  func parse(_ text: String) throws -> (Int64, Int64) {
    let result = try run(["date", "-u", "-d", text, "+%s %N"])
    let fields = result.stdout.split(separator: " ").map {
      Int64($0.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    guard result.status == 0, fields.count == 2, let seconds = fields[0], let fraction = fields[1]
    else { throw TestFailure("date -d \(text): \(result)") }
    return (seconds, fraction)
  }

  func clamp(_ seconds: Int64, _ nanoseconds: Int64) -> timespec {
    let kept = EpochNanoseconds.split(
      EpochNanoseconds.clamped(seconds: seconds, nanoseconds: nanoseconds))
    return timespec(tv_sec: Int(kept.seconds), tv_nsec: Int(kept.nanoseconds))
  }

  /// What the disk at `folder` keeps of `time` on a file of its own.
  func diskKeeps(_ time: timespec, in folder: String) throws -> timespec {
    let probe = "\(folder)/time-probe"
    let fd = open(probe, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw TestFailure("open \(probe): \(errnoText(errno))") }
    defer {
      close(fd)
      unlink(probe)
    }
    var shown = stat()
    guard futimens(fd, [time, time]) == 0, fstat(fd, &shown) == 0 else {
      throw TestFailure("futimens \(probe): \(errnoText(errno))")
    }
    return shown.st_mtim
  }

  func modificationTime(_ path: String) throws -> timespec {
    var shown = stat()
    guard lstat(path, &shown) == 0 else { throw TestFailure("lstat \(path): \(errnoText(errno))") }
    return shown.st_mtim
  }

  func same(_ a: timespec, _ b: timespec) -> Bool { a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec }

  @Test(.needs("touch", "date"))
  func touchWithAnyDateKeepsTheMountUpAndTheTimeAsDocumented() throws {
    try Library.with(programs: ["touch", "date"]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      var files: [(String, timespec)] = []
      for (index, date) in Self.dates.enumerated() {
        let (seconds, nanoseconds) = try parse(date)
        let kept = clamp(seconds, nanoseconds)
        let file = "file-\(index).txt"
        let folder = "folder-\(index)"
        try #require(try a.shell("echo \(index) > \(file) && mkdir \(folder)").status == 0)
        for name in [file, folder] {
          let touched = try run(["touch", "-d", date, a.path(name)])
          #expect(touched.status == 0, "touch -d '\(date)' \(name): \(touched)")
        }
        let fileTime = try diskKeeps(kept, in: a.state)
        let shownFile = try modificationTime(a.path(file))
        #expect(same(shownFile, fileTime), "\(date): \(file) shows \(shownFile), not \(fileTime)")
        let shownFolder = try modificationTime(a.path(folder))
        #expect(same(shownFolder, kept), "\(date): \(folder) shows \(shownFolder), not \(kept)")
        files.append((file, fileTime))
      }
      // The daemon is still there and serves.
      _ = try a.daemonPID()
      #expect(try a.shell("ls > /dev/null && echo ok > after.txt").status == 0)
      try library.sync(a, b)
      for (file, time) in files {
        let shown = try modificationTime(b.path(file))
        #expect(same(shown, time), "the desktop shows \(file) at \(shown), not \(time)")
      }
      // A remount reads the same times back from the state.
      try a.unmount()
      #expect(try a.mount().status == 0)
      for (file, time) in files {
        #expect(same(try modificationTime(a.path(file)), time), "\(file) after a remount")
      }
    }
  }
}
