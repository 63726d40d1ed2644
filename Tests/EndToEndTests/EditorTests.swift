import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// How real programs save, and a file held open while another device's change arrives.
@Suite("Editor saves and open files across devices")
struct EditorTests {
  @Test(
    "vim, sed -i and Python's atomic save on A make no conflict and leave no temp files on B",
    .needs("vim", "sed", "python3"), .docsyncOnly)
  func editorSavesAreOneHistory() throws {
    try Library.with(programs: ["vim", "sed", "python3"]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("doc.txt"), "x one\nx two\n")
      try library.sync(a, b)
      try b.pause()

      // Defaults: rename to doc.txt~, create doc.txt, unlink doc.txt~, probe file 4913.
      try check(
        ["vim", "-Es", "-N", "-u", "DEFAULTS", "-c", "%s/x/y/", "-c", "wq", "doc.txt"],
        cwd: a.mountPoint, timeout: .seconds(30))
      #expect(try read(a.path("doc.txt")) == "y one\ny two\n")
      try a.sync()
      try check(["sed", "-i", "s/y/z/", "doc.txt"], cwd: a.mountPoint)
      #expect(try read(a.path("doc.txt")) == "z one\nz two\n")
      try a.sync()
      let atomicSave = """
        import os, sys, tempfile
        fd, temp = tempfile.mkstemp(dir=".", prefix="save-")
        with os.fdopen(fd, "w") as f:
            f.write(open("doc.txt").read().replace("z", "w"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, 0o644)
        os.replace(temp, "doc.txt")
        print(temp)
        """
      let saved = try check(["python3", "-c", atomicSave], cwd: a.mountPoint)
      #expect(try read(a.path("doc.txt")) == "w one\nw two\n")
      // A last save with no sync after it: the three saves reach B in one pull.
      try check(["sed", "-i", "s/w/v/", "doc.txt"], cwd: a.mountPoint)
      try a.sync()

      try b.resume()
      try library.sync(b, a, b)
      let temp = (saved.stdout.trimmingCharacters(in: .whitespacesAndNewlines) as NSString)
        .lastPathComponent
      for device in [a, b] {
        #expect(try read(device.path("doc.txt")) == "v one\nv two\n", "\(device.name)")
        let names = try FileManager.default.contentsOfDirectory(atPath: device.mountPoint)
          .filter { $0 != ".versions" }
        #expect(names == ["doc.txt"], "\(device.name) shows \(names) (python temp: \(temp))")
        #expect(try findVersions(device).isEmpty, "\(device.name)")
        #expect(try device.status().conflicts.isEmpty, "\(device.name)")
      }
    }
  }

  @Test(
    "A file open for writing on B is not clobbered by A's change, and nothing is lost after",
    .needs("python3"), .docsyncOnly)
  func fileOpenForWritingWhenAChangeArrives() throws {
    try Library.with(programs: ["python3"]) { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("doc.txt"), "original\n")
      try library.sync(a, b)

      let writer = try BackgroundProcess(
        [
          "python3", "-c",
          """
          import sys
          f = open(sys.argv[1], "r+")
          print("opened", flush=True)
          sys.stdin.readline()
          f.seek(0)
          f.truncate()
          f.write("desktop's write\\n")
          f.close()
          print("closed", flush=True)
          """,
          b.path("doc.txt"),
        ])
      try writer.waitForOutput("opened")
      try write(a.path("doc.txt"), "laptop's change\n")
      try a.sync()
      // sync does not wait for files open for writing, so it returns with the change held.
      try b.sync()
      #expect(try read(b.path("doc.txt")) == "original\n", "the open file was replaced")

      try writer.send("go")
      try writer.waitForOutput("closed")
      #expect(try writer.wait() == 0)
      try library.sync(b, a, b)

      let onA = try currentAndVersions(a, "doc.txt")
      let onB = try currentAndVersions(b, "doc.txt")
      #expect(onA == onB, "the devices disagree")
      #expect(
        Set(onB) == ["desktop's write\n", "laptop's change\n"] && onB.count == 2,
        "current and versions on B: \(onB)")
      #expect(try findVersions(a) == findVersions(b))
    }
  }
}
