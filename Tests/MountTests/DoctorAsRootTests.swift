import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `docsync doctor` run by the ordinary test user on a machine set up wrong, one line per
/// finding, each naming its fix.
///
/// Tools/test opens /dev/fuse to everyone and adds user_allow_other to /etc/fuse.conf for the
/// whole run, and other tests mount at the same time, so these tests never touch the real
/// files: doctor runs in a private mount namespace (`unshare -m`, hence root) where a device
/// node of mode 0600 and a fuse.conf without user_allow_other are bind-mounted over
/// /dev/fuse and /etc/fuse.conf. Nothing outside the namespace sees them, and doctor reads
/// the same paths it reads on a person's machine.
@Suite("docsync doctor, as root for a private mount namespace", .docsyncOnly, .asRoot)
struct DoctorAsRootTests {
  static let programs = ["unshare", "mount", "mknod", "runuser", "sh", "chown"]

  /// A scratch machine: a FUSE device node, a fuse.conf, a hub folder and a state folder, all
  /// the test user's to reach.
  struct Machine {
    let base: String
    var device: String { base + "/fuse" }
    var configuration: String { base + "/fuse.conf" }
    var hubFolder: String { base + "/hubs" }
    var hub: String { hubFolder + "/hub.sqlite" }
    var state: String { base + "/state" }

    init(deviceMode: String, allowOther: Bool, hubFolderMode: Int) throws {
      base = ScratchFolder.make("docsync-doctor")
      let user = TestEnvironment.testUser
      try check(["chmod", "0755", base])
      try check(["mknod", "-m", deviceMode, base + "/fuse", "c", "10", "229"])
      let text =
        "# mount_max = 1000\n" + (allowOther ? "user_allow_other\n" : "#user_allow_other\n")
      try text.write(toFile: base + "/fuse.conf", atomically: true, encoding: .utf8)
      for folder in [base + "/hubs", base + "/state"] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        try check(["chown", user, folder])
      }
      try check(["chmod", String(hubFolderMode, radix: 8), base + "/hubs"])
      try check(["chmod", "0700", base + "/state"])
    }

    /// `docsync doctor --allow-other` as the test user, with this machine's device and
    /// configuration in place of the real ones.
    func doctor() throws -> RunResult {
      let binary = try MountFixture.docsyncBinary()
      let script = """
        set -e
        mount --bind "$1" /dev/fuse
        mount --bind "$2" /etc/fuse.conf
        shift 2
        exec runuser -u "$@"
        """
      return try run(
        [
          "unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", device,
          configuration, TestEnvironment.testUser, "--", binary, "doctor", "--allow-other",
          "--hub", hub, "--state", state,
        ], cwd: "/")
    }
  }

  static func lines(_ result: RunResult, _ verdict: String) -> [String] {
    result.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix(verdict + " ") }
  }

  @Test(.needs("unshare", "mount", "mknod", "runuser", "sh", "chown"))
  func eachMistakeIsOneLineThatNamesItsFix() throws {
    try TestEnvironment.require(programs: Self.programs)
    let machine = try Machine(deviceMode: "0600", allowOther: false, hubFolderMode: 0o755)
    let result = try machine.doctor()
    #expect(result.status == 1, "\(result)")
    let fixes = Self.lines(result, "fix")
    #expect(fixes.count == 3, "\(result)")
    #expect(
      fixes.contains {
        $0.hasPrefix("fix   /dev/fuse is mode 0600 (owner root)")
          && $0.hasSuffix("as root, chmod 0666 /dev/fuse (Debian's udev rules make it 0666)")
      }, "\(result)")
    #expect(
      fixes.contains(
        "fix   --allow-other needs user_allow_other in /etc/fuse.conf: "
          + "as root, echo user_allow_other >> /etc/fuse.conf"), "\(result)")
    #expect(
      fixes.contains(
        "fix   hub folder \(machine.hubFolder) is mode 0755: other users of this machine may "
          + "read its documents; chmod go-rwx \(machine.hubFolder)"), "\(result)")
    #expect(result.stderr == "docsync: 3 things to fix (lines starting with fix)\n", "\(result)")
    // The rest is said once each and needs nothing.
    #expect(result.stdout.contains("ok    state folder \(machine.state): mode 0700, private\n"))
    #expect(result.stdout.contains("FUSE passthrough: "), "\(result)")
    #expect(result.stdout.contains("FUSE over io_uring: "), "\(result)")
    // Nothing outside the namespace changed.
    var info = stat()
    #expect(stat("/dev/fuse", &info) == 0 && info.st_mode & 0o777 == 0o666)
  }

  @Test(.needs("unshare", "mount", "mknod", "runuser", "sh", "chown"))
  func aMachineSetUpRightHasNothingToFix() throws {
    try TestEnvironment.require(programs: Self.programs)
    let machine = try Machine(deviceMode: "0666", allowOther: true, hubFolderMode: 0o700)
    let result = try machine.doctor()
    #expect(result.status == 0, "\(result)")
    #expect(Self.lines(result, "fix").isEmpty, "\(result)")
    #expect(result.stdout.contains("ok    /dev/fuse: mode 0666, this user can open it\n"))
    #expect(result.stdout.contains("ok    /etc/fuse.conf: --allow-other can be used\n"))
    #expect(result.stdout.contains("ok    hub \(machine.hub): not made yet\n"), "\(result)")
    // Every line is one of the three verdicts.
    for line in result.stdout.split(separator: "\n") {
      #expect(["ok    ", "fix   ", "note  "].contains { line.hasPrefix($0) }, "\(line)")
    }
  }
}
