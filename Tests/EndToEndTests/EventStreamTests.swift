import Foundation
import MountHarness
import Testing

/// Being told, discreetly (issue 18): `docsync events` streams what happens, and a conflict
/// that docsync could not merge becomes one desktop notification on the session bus.
@Suite("Events and desktop notifications")
struct EventStreamTests {
  /// The JSON objects `docsync events --json` printed so far.
  func objects(_ process: BackgroundProcess) -> [[String: Any]] {
    process.output.split(separator: "\n").compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
  }

  @Test(
    """
    A conflict is streamed within a second of the sync that found it and notified on the bus; \
    --no-notify stays quiet; taking the merge is streamed as resolved
    """,
    .needs("cp", "dbus-daemon", "dbus-monitor"), .docsyncOnly)
  func conflictsAreHeard() throws {
    let bus = try SessionBusDaemon()
    try Library.with { library in
      let session = ["DBUS_SESSION_BUS_ADDRESS": bus.address]
      let a = try library.device("laptop", environment: session)
      let b = try library.device("desktop", environment: session)
      let quiet = try library.device("tablet", options: ["--no-notify"], environment: session)
      let docsync = try MountFixture.docsyncBinary()
      // --after 0: from the first event each mount kept, so that nothing is missed while the
      // streams connect.
      let stream = try BackgroundProcess([
        docsync, "events", b.mountPoint, "--json", "--after", "0",
      ])
      let everyMount = try BackgroundProcess([docsync, "events", "--after", "0"])

      try write(a.path("plan.md"), "title\none\ntwo\n")
      try library.sync(a, b, quiet)
      try b.pause()
      try write(a.path("plan.md"), "title\nONE by laptop\ntwo\n")
      try a.sync()
      usleep(20_000)
      try write(b.path("plan.md"), "title\none\nTWO by desktop\n")
      try b.resume()
      // The desktop's sync pushes its edit and pulls the laptop's: it finds the conflict.
      try b.sync()
      try stream.waitForOutput("\"event\":\"conflict\"", timeout: .seconds(1))
      let conflict = try #require(objects(stream).first { $0["event"] as? String == "conflict" })
      #expect(conflict["path"] as? String == "plan.md")
      #expect(conflict["mountPoint"] as? String == b.mountPoint)
      #expect(conflict["versions"] as? Int == 1)
      #expect(conflict["devices"] as? [String] == ["desktop", "laptop"], "\(conflict)")
      let added = conflict["added"] as? [String] ?? []
      #expect(added == (try versionNames(b, of: "plan.md")), "\(conflict)")

      // One notification from the desktop's mount, naming the document and both devices.
      let call = try bus.waitForCall(
        "Notify", containing: ["Conflict in plan.md", "desktop and laptop", b.mountPoint])
      #expect(call.contains("string \"docsync\""), "\(call)")
      try library.sync(a, quiet)
      try bus.waitForCall("Notify", containing: ["Conflict in plan.md", a.mountPoint])
      #expect(
        bus.calls("Notify").filter { $0.contains(quiet.mountPoint) }.isEmpty,
        "--no-notify sent a notification:\n\(bus.messages)")
      #expect(bus.calls("Notify").filter { $0.contains(b.mountPoint) }.count == 1)

      // Taking the merge on the desktop resolves the conflict everywhere.
      try check(["cp", ".versions/plan.md/merged.md", "plan.md"], cwd: b.mountPoint)
      try library.sync(b, a, quiet)
      try stream.waitForOutput("\"how\":\"merged\"", timeout: .seconds(5))
      let resolved = try #require(objects(stream).first { $0["event"] as? String == "resolved" })
      #expect(resolved["path"] as? String == "plan.md" && resolved["by"] as? String == "desktop")
      #expect(resolved["remaining"] as? Int == 0)

      // Without a mount point: every mount of this user, one readable line per event.
      for device in [a, b, quiet] {
        try everyMount.waitForOutput(
          "\(device.mountPoint) conflict: plan.md was changed on ", timeout: .seconds(5))
        try everyMount.waitForOutput(
          "\(device.mountPoint) resolved: plan.md on desktop (a merge was saved)",
          timeout: .seconds(5))
      }
      #expect(everyMount.output.contains("\(a.mountPoint) uploaded "), "\(everyMount.output)")
      #expect(everyMount.output.contains("\(b.mountPoint) downloaded "), "\(everyMount.output)")
    }
  }

  @Test(
    """
    A saved version whose content cannot be read here, with the file changed since, is \
    streamed as heldBack and notified once; docsync sync tries it again and uploads it once it \
    reads again
    """,
    .needs("dbus-daemon", "dbus-monitor", "sha256sum"), .docsyncOnly)
  func aVersionHeldBackIsHeard() throws {
    let bus = try SessionBusDaemon()
    try Library.with { library in
      let a = try library.device(
        "laptop", environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
      let stream = try BackgroundProcess([
        try MountFixture.docsyncBinary(), "events", a.mountPoint, "--json", "--after", "0",
      ])
      try a.sync()
      try a.pause()
      // Recorded once quiet, while paused: its blob is made, not uploaded.
      let text = "the only copy of this draft\n"
      try write(a.path("draft.md"), text)
      let base = (a.state as NSString).deletingLastPathComponent
      let copy = base + "/draft-copy"
      try write(copy, text)
      let hex = String(try check(["sha256sum", copy]).stdout.prefix(64))
      let blob = "\(a.state)/blobs/\(hex.prefix(2))/\(hex)"
      let deadline = ContinuousClock.now + .seconds(10)
      while access(blob, F_OK) != 0 && ContinuousClock.now < deadline { usleep(20_000) }
      // Unreadable, as on a bad sector: its name leads to a folder, which opens and cannot
      // be read. Then the file changes, so nothing else holds that content.
      let folder = base + "/unreadable"
      #expect(mkdir(folder, 0o755) == 0)
      #expect(rename(blob, blob + ".aside") == 0 && symlink(folder, blob) == 0)
      try write(a.path("draft.md"), "the next draft\n")
      usleep(300_000)
      try a.resume()
      for _ in 0..<2 {
        let result = try a.trySync(timeout: 20)
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("cannot upload draft.md"), "\(result)")
      }
      try stream.waitForOutput("\"event\":\"heldBack\"", timeout: .seconds(5))
      let call = try bus.waitForCall(
        "Notify", containing: ["cannot upload a version of draft.md", a.mountPoint])
      #expect(call.contains("docsync sync \(a.mountPoint)"), "\(call)")
      #expect((try a.status()).heldBack == ["draft.md"])

      // The disk reads again: the next sync uploads it.
      #expect(unlink(blob) == 0 && rename(blob + ".aside", blob) == 0)
      try a.sync()
      #expect((try a.status()).heldBack == nil)
      let told = objects(stream).filter { $0["event"] as? String == "heldBack" }
      #expect(told.count == 1 && told.first?["path"] as? String == "draft.md", "\(told)")
      #expect(bus.calls("Notify").filter { $0.contains("cannot upload") }.count == 1)
    }
  }

  @Test("events names a mount point that is not a docsync mount in one line", .docsyncOnly)
  func eventsOfNoMount() throws {
    let result = try run([try MountFixture.docsyncBinary(), "events", "/"])
    #expect(result.status == 1)
    #expect(result.stderr == "docsync: / is not a docsync mount\n", "\(result)")
  }
}
