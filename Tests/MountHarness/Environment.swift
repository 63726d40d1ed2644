import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// How this test run was asked to behave, read once from the environment.
public enum TestEnvironment {
  public static let variables = ProcessInfo.processInfo.environment

  /// Under CI a missing program or a missing /dev/fuse fails the test: a suite that passes by
  /// skipping everything would hide a broken machine.
  public static let isCI = variables["CI"] == "true"

  /// `DOCSYNC_MOUNTTESTS_PLAIN=1` hands out plain folders instead of mounts, so that each
  /// test's expectations can be proven on a local file system before docsync mounts.
  public static let isPlain = variables["DOCSYNC_MOUNTTESTS_PLAIN"] == "1"

  public static let fuseDevice = "/dev/fuse"

  /// Root skips every permission check that `default_permissions` makes the kernel apply, so
  /// Tools/test runs the mount and end-to-end tests as an ordinary user, and only the tests of
  /// what needs root (FUSE passthrough, acting as other users) as root.
  public static let isRoot = geteuid() == 0

  /// The ordinary accounts that Tools/test creates (Tools/test-users.sh): the one the mount
  /// tests run as, and a second one that reaches its mounts through `--allow-other`.
  public static let testUser = variables["DOCSYNC_TEST_USER"] ?? "docsync-user"
  public static let otherUser = variables["DOCSYNC_TEST_OTHER_USER"] ?? "docsync-other"

  public static func executable(_ name: String) -> String? {
    let path = variables["PATH"] ?? "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    for folder in path.split(separator: ":") {
      let candidate = "\(folder)/\(name)"
      if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
  }

  /// What is missing for a test that runs `programs` (and mounts, unless in plain mode).
  public static func missing(programs: [String], fuse: Bool = true) -> [String] {
    var missing = programs.filter { executable($0) == nil }
    if fuse && !isPlain {
      if access(fuseDevice, R_OK | W_OK) != 0 { missing.append(fuseDevice) }
      if executable("fusermount3") == nil { missing.append("fusermount3") }
    }
    return missing
  }

  /// Fails (by throwing) when something the test needs is missing. Locally the `.needs` trait
  /// has already skipped such a test; under CI the trait lets it run so that it fails here.
  public static func require(programs: [String], fuse: Bool = true) throws {
    let absent = missing(programs: programs, fuse: fuse)
    guard absent.isEmpty else {
      throw RunError(description: "missing on this machine: \(absent.joined(separator: ", "))")
    }
  }
}

extension Trait where Self == ConditionTrait {
  /// Skips the test locally when a program it runs (or FUSE) is missing; never under CI.
  public static func needs(_ programs: String..., fuse: Bool = true) -> Self {
    .enabled("needs \(programs.joined(separator: ", ")) and FUSE") {
      TestEnvironment.isCI || TestEnvironment.missing(programs: programs, fuse: fuse).isEmpty
    }
  }

  /// A test of what only root may do (FUSE passthrough; acting as the test users): skipped
  /// locally for an ordinary user, run (and failing there) under CI. Tools/test runs the suites
  /// whose names end in `AsRootTests` as root, apart from the rest of MountTests and
  /// EndToEndTests.
  public static var asRoot: Self {
    .enabled("needs root") { TestEnvironment.isCI || TestEnvironment.isRoot }
  }

  /// A test of what an ordinary user meets (the kernel's permission checks, fusermount3):
  /// skipped locally for root, run (and failing there) under CI.
  public static var asOrdinaryUser: Self {
    .enabled("needs an ordinary user, not root") {
      TestEnvironment.isCI || !TestEnvironment.isRoot
    }
  }

  /// A test of docsync itself (its `.versions`, its daemon, its messages): nothing to prove
  /// against a plain folder.
  public static var docsyncOnly: Self {
    .disabled("docsync-specific: not run in plain mode") { TestEnvironment.isPlain }
  }
}
