import Foundation
import Glibc
import MountHarness
import Testing

/// An unmount right after 10,000 renames in one quiet window records them and exits: the
/// recording of the window is linear in its renames (Tools/BenchModel measures it).
@Suite("Unmount right after many renames", .docsyncOnly)
struct ManyRenamesTests {
  static let count = 10_000

  @Test(
    "10,000 renames, unmount at once: the daemon exits and every device shows the new names",
    .needs("python3"))
  func unmountRightAfterTenThousandRenames() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let make = """
        import os, sys
        for i in range(int(sys.argv[2])):
            folder = os.path.join(sys.argv[1], "d%d" % (i // 1000))
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "old%d.txt" % i), "w") as f:
                f.write("file %d\\n" % i)
        """
      try check(["python3", "-c", make, a.path("many"), "\(Self.count)"])
      try a.sync(timeout: 300)
      let rename = """
        import os, sys
        for i in range(int(sys.argv[2])):
            folder = os.path.join(sys.argv[1], "d%d" % (i // 1000))
            os.rename(os.path.join(folder, "old%d.txt" % i), os.path.join(folder, "new%d.txt" % i))
        """
      try check(["python3", "-c", rename, a.path("many"), "\(Self.count)"])
      let pid = try a.daemonPID()
      let started = ContinuousClock.now
      // `docsync unmount` returns once the daemon has recorded the window and exited.
      try a.unmount()
      let took = started.duration(to: .now)
      #expect(kill(pid, 0) != 0 && errno == ESRCH, "the daemon \(pid) is still running")
      FileHandle.standardError.write(
        Data("unmount after \(Self.count) renames took \(took)\n".utf8))
      try a.mount()
      try a.sync(timeout: 300)
      #expect(try a.status().pendingUploads == 0)
      let b = try library.device("desktop")
      try b.sync(timeout: 300)
      for device in [a, b] {
        var names: [String] = []
        for folder in 0..<(Self.count / 1000) {
          names += try FileManager.default.contentsOfDirectory(
            atPath: device.path("many/d\(folder)"))
        }
        #expect(names.count == Self.count, "\(device.name)")
        #expect(names.allSatisfy { $0.hasPrefix("new") }, "\(device.name)")
        #expect(try read(device.path("many/d9/new9999.txt")) == "file 9999\n")
      }
      #expect(try findVersions(a).isEmpty)
    }
  }
}
