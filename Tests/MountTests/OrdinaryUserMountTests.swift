import FileSystemConformance
import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What an ordinary user's mount is made of: Tools/test runs the mount tests as one, and these
/// checks make sure that it did, and that what docsync made is theirs and private.
@Suite("An ordinary user's mount", .docsyncOnly, .asOrdinaryUser)
struct OrdinaryUserMountTests {
  @Test(.needs())
  func theMountItsDaemonAndItsHubAreTheUsers() throws {
    try #require(!TestEnvironment.isRoot, "run the mount tests as an ordinary user (Tools/test)")
    try MountFixture.withMount { m throws in
      var info = stat()
      #expect(stat("/proc/\(try m.daemonPID())", &info) == 0)
      #expect(info.st_uid == getuid(), "the daemon runs as uid \(info.st_uid)")
      // fusermount3 records who mounted: user_id= in the mount's super options.
      let mountInfo = try #require(MountFixture.procFile("/proc/self/mountinfo"))
      let line = mountInfo.split(separator: "\n").first {
        $0.split(separator: " ").dropFirst(4).first.map {
          MountFixture.unescapeMountInfo(String($0))
        } == m.mountPoint
      }
      #expect(line?.contains("user_id=\(getuid()),") == true, "\(line ?? "no mountinfo line")")
      for path in [m.mountPoint, m.path(".versions")] {
        #expect(stat(path, &info) == 0 && info.st_uid == getuid(), "\(path): uid \(info.st_uid)")
      }
      // The hub docsync made holds every document: nobody else may read it.
      for path in [m.scratch("hub.sqlite")] {
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o077 == 0, "\(path) is \(String(info.st_mode & 0o7777, radix: 8))")
      }
    }
  }

  /// The daemon's "Max open files" line of /proc/PID/limits, and its fields split on spaces
  /// (the soft limit at 3, the hard one at 4).
  static func openFileLimits(of m: MountFixture) throws -> (line: Substring?, fields: [Substring]) {
    let limits = try #require(MountFixture.procFile("/proc/\(try m.daemonPID())/limits"))
    let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }
    return (line, line?.split(separator: " ", omittingEmptySubsequences: true) ?? [])
  }

  /// Every file open on the mount holds its working file open in the daemon. Started with the
  /// soft limit on descriptors most people have (1,024), the daemon lifts its own to the hard
  /// limit, so a person may hold as many files open on the mount as their own limit allows:
  /// before, the 999th open failed with "Too many open files".
  @Test(.needs())
  func moreFilesOpenOnTheMountThanTheUsualDescriptorLimit() throws {
    try #require(!TestEnvironment.isRoot, "run the mount tests as an ordinary user (Tools/test)")
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    var original = rlimit()
    try #require(getrlimit(resource, &original) == 0)
    let wanted = 1_500
    try #require(
      original.rlim_max >= rlim_t(wanted + 200),
      "the hard limit on open files (\(original.rlim_max)) leaves no room to test this")
    defer { _ = setrlimit(resource, &original) }
    // The daemon inherits this process's limits, as it would a login session's.
    var usual = original
    usual.rlim_cur = min(original.rlim_cur, 1024)
    try #require(setrlimit(resource, &usual) == 0)
    try MountFixture.withMount { m throws in
      let (line, fields) = try Self.openFileLimits(of: m)
      #expect(
        fields.count >= 5 && fields[3] == fields[4] && fields[3] == "\(original.rlim_max)",
        "the daemon's \(line ?? "limits have no open-files line")")
      var roomy = original
      roomy.rlim_cur = original.rlim_max
      try #require(setrlimit(resource, &roomy) == 0)
      var descriptors: [Int32] = []
      defer { for fd in descriptors { close(fd) } }
      for index in 0..<wanted {
        let fd = open(m.path("open-\(index)"), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
          Issue.record("open of file \(index): \(String(cString: strerror(errno)))")
          break
        }
        descriptors.append(fd)
      }
      #expect(descriptors.count == wanted)
      // Every descriptor writes its own file; files on both sides of the old limit read back
      // what their own descriptor wrote.
      for (index, fd) in descriptors.enumerated() {
        let text = Array("file \(index)\n".utf8)
        #expect(write(fd, text, text.count) == text.count, "write of file \(index)")
      }
      for fd in descriptors { close(fd) }
      descriptors.removeAll()
      for index in [0, 999, wanted - 1] {
        let content = try String(contentsOfFile: m.path("open-\(index)"), encoding: .utf8)
        #expect(content == "file \(index)\n")
      }
    }
  }

  /// Every file open on the mount holds a descriptor of the daemon's. At the daemon's limit a
  /// reserve stays for its own work: opens on the mount are refused first (ENFILE), and a file
  /// closed meanwhile is still recorded and reaches another device, while `docsync sync` and
  /// `status` answer. Before, a person's open files took the daemon's last descriptors: it
  /// could not record what was closed, and the control socket's thread ended at its first
  /// EMFILE, so that `docsync sync` never answered again on that mount.
  @Test(.needs())
  func atTheDaemonsDescriptorLimitItKeepsSyncing() throws {
    try #require(!TestEnvironment.isRoot, "run the mount tests as an ordinary user (Tools/test)")
    let limit = 300
    try MountFixture.withMount(
      programs: ["prlimit"], launcher: ["prlimit", "--nofile=\(limit):\(limit)", "--"]
    ) { m throws in
      let binary = try MountFixture.docsyncBinary()
      let (line, fields) = try Self.openFileLimits(of: m)
      try #require(
        fields.count >= 5 && fields[3] == "\(limit)" && fields[4] == "\(limit)",
        "the daemon's \(line ?? "limits have no open-files line")")
      var descriptors: [Int32] = []
      defer { for fd in descriptors { close(fd) } }
      var refusal: Int32 = 0
      for index in 0..<limit {
        let fd = open(m.path("held-\(index)"), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
          refusal = errno
          break
        }
        descriptors.append(fd)
      }
      #expect(refusal == ENFILE, "the open after \(descriptors.count) files: errno \(refusal)")
      // An idle mount holds about 60 descriptors, the reserve at this limit is 75.
      #expect(
        (100..<(limit - 64)).contains(descriptors.count),
        "\(descriptors.count) files held open")
      #expect(
        access(m.path("held-\(descriptors.count)"), F_OK) != 0 && errno == ENOENT,
        "the refused create left its name behind")
      // The kernel sends RELEASE after close(2) returns, in the background, so the daemon's
      // descriptor of a closed file is free a moment later.
      func openOnceReleased(_ name: String) -> Int32 {
        var fd: Int32 = -1
        for _ in 0..<500 {
          fd = open(m.path(name), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
          if fd >= 0 || errno != ENFILE { break }
          usleep(10_000)
        }
        return fd
      }
      // A document written and closed at the limit; another file takes its place, so that
      // recording it (after a quiet moment) can only use the reserve.
      let text = Array("written at the limit\n".utf8)
      #expect(write(descriptors[0], text, text.count) == text.count)
      close(descriptors.removeFirst())
      let filler = openOnceReleased("filler")
      #expect(filler >= 0, "the open after a close: \(String(cString: strerror(errno)))")
      if filler >= 0 { descriptors.append(filler) }
      let synced = try run(
        [binary, "sync", m.mountPoint, "--timeout", "60"], timeout: .seconds(90))
      #expect(synced.status == 0, "docsync sync at the limit: \(synced)\n\(m.logTail())")
      let status = try run([binary, "status", m.mountPoint], timeout: .seconds(30))
      #expect(status.status == 0, "docsync status at the limit: \(status)")
      // Another device on the same hub gets it.
      let second = m.scratch("second")
      try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
      try MountFixture.makePrivateFolder(m.scratch("second-state"))
      try check([
        binary, "mount", second, "--state", m.scratch("second-state"), "--hub",
        m.scratch("hub.sqlite"), "--device", "second",
      ])
      defer { _ = try? run([binary, "unmount", second]) }
      try check([binary, "sync", second])
      let arrived = try String(contentsOfFile: "\(second)/held-0", encoding: .utf8)
      #expect(arrived == "written at the limit\n")
      // Once the files close, opens on the mount work again.
      for fd in descriptors { close(fd) }
      descriptors.removeAll()
      let after = openOnceReleased("after")
      #expect(after >= 0, "an open after the files closed: \(String(cString: strerror(errno)))")
      if after >= 0 { close(after) }
    }
  }

  /// A device that cannot store what it pulls (here its blob store's temporary folder is a
  /// file, in the state folder the user owns; a full disk does the same) is not offline: as
  /// this user, `docsync sync` fails at once saying why, `status` says it cannot sync, the file
  /// keeps its old content, and all comes right once the store can be written again.
  @Test(.needs())
  func aDeviceThatCannotStoreWhatItPullsSaysSoAsThisUser() throws {
    try #require(!TestEnvironment.isRoot, "run the mount tests as an ordinary user (Tools/test)")
    try MountFixture.withMount { m throws in
      let binary = try MountFixture.docsyncBinary()
      let second = m.scratch("second")
      let secondState = m.scratch("second-state")
      try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
      try MountFixture.makePrivateFolder(secondState)
      try check([
        binary, "mount", second, "--state", secondState, "--hub", m.scratch("hub.sqlite"),
        "--device", "second",
      ])
      defer { _ = try? run([binary, "unmount", second]) }
      try Data("first\n".utf8).write(to: URL(fileURLWithPath: m.path("plan.md")))
      try check([binary, "sync", m.mountPoint])
      try check([binary, "sync", second])
      let incoming = secondState + "/blobs/tmp"
      #expect(rename(incoming, incoming + "-aside") == 0)
      #expect(FileManager.default.createFile(atPath: incoming, contents: Data()))
      // Larger than what a pull brings into memory: it is fetched into a blob file.
      let draft = String(repeating: "the second draft\n", count: 10_000)
      try Data(draft.utf8).write(to: URL(fileURLWithPath: m.path("plan.md")))
      try check([binary, "sync", m.mountPoint])
      let refused = try run([binary, "sync", second, "--timeout", "30"], timeout: .seconds(60))
      #expect(refused.status == 1, "\(refused)")
      #expect(refused.stderr.contains("cannot sync: cannot create a blob"), "\(refused.stderr)")
      let status = try check([binary, "status", second]).stdout
      #expect(status.contains("state:     cannot sync since"), "\(status)")
      #expect(try String(contentsOfFile: second + "/plan.md", encoding: .utf8) == "first\n")
      #expect(unlink(incoming) == 0 && rename(incoming + "-aside", incoming) == 0)
      try check([binary, "sync", second])
      #expect(try String(contentsOfFile: second + "/plan.md", encoding: .utf8) == draft)
      #expect(try check([binary, "status", second]).stdout.contains("state:     up to date"))
    }
  }

  /// The permission checks that the mount's own run as this user relies on, against a plain
  /// folder of the local disk as the same user: proof that docsync refuses what ext4 refuses.
  @Test func permissionChecksAgreeWithAPlainFolderAsThisUser() throws {
    try #require(!TestEnvironment.isRoot, "run the mount tests as an ordinary user (Tools/test)")
    let subject = PosixSubject(root: ScratchFolder.make("docsync-plain-permissions"))
    let checks = ConformanceSuite.checks(for: subject.capabilities).filter {
      $0.group == "permissions"
    }
    #expect(checks.count >= 7)
    for check in checks { try ConformanceSuite.run(check, on: subject) }
  }

  /// The kernel walks the names it has cached without asking docsync: when a folder loses its
  /// search bit, docsync drops them, so that the walk asks and is refused, as on a local disk.
  @Test(.needs())
  func aFolderThatLosesSearchPermissionStopsItsCachedNames() throws {
    try #require(!TestEnvironment.isRoot, "run the mount tests as an ordinary user (Tools/test)")
    try MountFixture.withMount { m throws in
      #expect(mkdir(m.path("d"), 0o755) == 0)
      #expect(mkdir(m.path("d/sub"), 0o755) == 0)
      try Data("cached\n".utf8).write(to: URL(fileURLWithPath: m.path("d/sub/f")))
      var info = stat()
      #expect(stat(m.path("d/sub/f"), &info) == 0)
      #expect(chmod(m.path("d"), 0o600) == 0)
      // The names are dropped from the invalidation thread, right after chmod's reply.
      var refused = false
      for _ in 0..<200 {
        if stat(m.path("d/sub/f"), &info) != 0 && errno == EACCES {
          refused = true
          break
        }
        usleep(10_000)
      }
      #expect(refused, "stat of a name below a folder without search permission")
      #expect(open(m.path("d/sub/f"), O_RDONLY) == -1 && errno == EACCES)
      #expect(chmod(m.path("d"), 0o700) == 0)
      #expect(stat(m.path("d/sub/f"), &info) == 0 && info.st_size == 7)
    }
  }
}
