import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `docsync doctor --hub postgres://...`: the hub reached with the device's own role, and this
/// machine's clock measured against the server's; a clock hours ahead (libfaketime) is one line
/// that names the fix.
@Suite("docsync doctor on a PostgreSQL hub", .docsyncOnly, .postgresHub)
struct DoctorPostgresTests {
  static let faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

  func doctor(_ url: String, _ environment: [String: String]) throws -> RunResult {
    let state = ScratchFolder.make("docsync-doctor-state")
    return try run(
      [try MountFixture.docsyncBinary(), "doctor", "--hub", url, "--state", state],
      env: environment, timeout: .seconds(60))
  }

  @Test(.needs("psql", fuse: false))
  func theHubIsReachedAndTheClockMeasured() throws {
    let (url, environment, cleanup) = try TestPostgres.newAccount()
    defer { cleanup() }
    let result = try doctor(url, environment)
    let lines = result.stdout.split(separator: "\n").map(String.init)
    #expect(lines.contains { $0.hasPrefix("ok    hub postgres://") && $0.hasSuffix(": reachable") })
    #expect(
      lines.contains { $0.hasPrefix("ok    clock: within ") && $0.contains("of the hub's server") },
      "\(result)")

    guard access(Self.faketime, R_OK) == 0 else {
      Issue.record("\(Self.faketime) is missing: apt-get install libfaketime")
      return
    }
    let ahead = try doctor(
      url,
      environment.merging([
        "LD_PRELOAD": Self.faketime, "FAKETIME": "+2h", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
      ]) { $1 })
    #expect(ahead.status == 1, "\(ahead)")
    let fixes = ahead.stdout.split(separator: "\n").filter { $0.hasPrefix("fix") }
    #expect(fixes.count == 1, "\(ahead)")
    let fix = String(fixes.first ?? "")
    #expect(fix.hasPrefix("fix   clock: this machine is 720"), "\(ahead)")
    #expect(fix.contains(" s ahead of the hub's server (±"), "\(ahead)")
    #expect(fix.hasSuffix("turn on time sync (as root, apt-get install systemd-timesyncd)"))
  }
}
