import Foundation
import MountHarness
import Testing

/// A device holds each current document's content once (issue 16): a pulled document is its
/// working file alone, and a saved one loses its copy for upload once the hub has it.
@Suite("Content held once")
struct ContentOnceTests {
  @Test(
    "256 MiB of new documents grow the writer's and the reader's state folders by at most 1.1 times",
    .needs(), .docsyncOnly)
  func newDocumentsAreHeldOnce() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      let b = try library.device("desktop")
      try write(a.path("small.md"), "a small document\n")
      try library.sync(a, b)
      let before = try [a, b].map(stateKiB)
      // Large files and many small ones: 12 x 16 MiB and 1024 x 64 KiB.
      try check(["mkdir", a.path("large"), a.path("small")])
      try check([
        "sh", "-c",
        """
        for i in $(seq 1 12); do head -c 16777216 /dev/urandom > "$1/large/$i.bin"; done
        for i in $(seq 1 1024); do head -c 65536 /dev/urandom > "$1/small/$i.bin"; done
        """,
        "sh", a.mountPoint,
      ])
      try a.sync(timeout: 600)
      try b.sync(timeout: 600)
      let written = 256 * 1024
      let after = try [a, b].map(stateKiB)
      print("state folders (KiB, laptop and desktop): before \(before), after \(after)")
      for (start, end) in zip(before, after) {
        #expect(end - start <= written * 11 / 10, "before \(before), after \(after)")
      }
      #expect(try describe(b.path("large/12.bin")).size == 16_777_216)
      try check(["cmp", a.path("small/1024.bin"), b.path("small/1024.bin")])
      // Content held only by working files still goes where it is needed: an edit of one
      // document on each side makes a conflict whose versions read the same on both devices.
      try check(["sh", "-c", "echo laptop >> \"$1\"", "sh", a.path("small/1.bin")])
      try check(["sh", "-c", "echo desktop >> \"$1\"", "sh", b.path("small/1.bin")])
      try library.sync(a, b, a)
      let names = try versionNames(a, of: "small/1.bin")
      #expect(names.count == 1, "\(names)")
      #expect(try versionNames(b, of: "small/1.bin") == names)
      for name in names {
        let version = ".versions/small/1.bin/\(name)"
        let size = try describe(a.path(version)).size
        #expect(size == 65536 + 7 || size == 65536 + 8, "\(size)")
        try check(["cmp", a.path(version), b.path(version)])
      }
      try check(["cmp", a.path("small/1.bin"), b.path("small/1.bin")])
    }
  }
}

/// `du -sk` of a device's state folder.
private func stateKiB(_ device: Device) throws -> Int {
  let output = try check(["du", "-sk", device.state]).stdout
  return Int(output.split(separator: "\t").first ?? "") ?? -1
}
