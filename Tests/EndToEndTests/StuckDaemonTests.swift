import Foundation
import MountHarness
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A daemon killed while a call through its own mount waits for it cannot exit: the call can
/// only end with an answer its dead threads were to give, so the process keeps `/dev/fuse` and
/// the state folder's lock for ever (issue 42). `docsync unmount` and `docsync mount` end such a
/// process by aborting its FUSE connection, as nobody else can without root's help.
///
/// The stuck process here is a stand-in for docsync: a few lines of Python that mount through
/// `fusermount3` as docsync does, hold the state folder's lock, record the pid and connection
/// as docsync does, and make a call through their own mount that they read and never answer.
/// That is the kernel state a killed docsync met (its announcer's `openat` read by a worker
/// that died), made on purpose rather than by the luck of a `kill -9`.
@Suite("A killed daemon that cannot exit")
struct StuckDaemonTests {
  static let stuckDaemon = #"""
    import os, socket, struct, subprocess, sys, threading, time, fcntl
    mnt, state = sys.argv[1], sys.argv[2]
    lock = os.open(state + "/lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    env = dict(os.environ, _FUSE_COMMFD=str(theirs.fileno()))
    helper = subprocess.Popen(
        ["fusermount3", "-o", "fsname=docsync:" + state + ",subtype=docsync", "--", mnt],
        env=env, pass_fds=[theirs.fileno()])
    _, fds, _, _ = socket.recv_fds(ours, 16, 1)
    helper.wait()
    fuse = fds[0]
    def request():
        data = os.read(fuse, 1 << 20)
        length, opcode, unique = struct.unpack_from("<IIQ", data)
        return opcode, unique, data[40:]
    opcode, unique, body = request()
    assert opcode == 26, opcode  # FUSE_INIT
    major, minor = struct.unpack_from("<II", body)
    init = struct.pack("<IIIIHHIIHHI", 7, min(minor, 31), 0, 0, 0, 0, 4096, 1, 0, 0, 0) + bytes(28)
    os.write(fuse, struct.pack("<IiQ", 16 + len(init), 0, unique) + init)
    # A call through the mount from this process, read and never answered: as a killed daemon's
    # own call whose answer its dead threads were to give.
    threading.Thread(target=lambda: os.stat(mnt + "/x"), daemon=True).start()
    while True:
        opcode, unique, body = request()
        if opcode == 1:  # FUSE_LOOKUP
            break
        os.write(fuse, struct.pack("<IiQ", 16, -38, unique))  # ENOSYS to the rest
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        if fields[4] == mnt:
            major_, minor_ = map(int, fields[2].split(":"))
            open(state + "/docsync.connection", "w").write("%d\n" % (major_ << 20 | minor_))
    open(state + "/docsync.pid", "w").write("%d\n" % os.getpid())
    print("stuck", flush=True)
    time.sleep(3600)
    """#

  /// The stand-in, killed and stuck, and its FUSE connection's number.
  private struct Stuck {
    let process: BackgroundProcess
    let connection: String

    /// Ends it whatever docsync did, so that a failing test fails rather than waits for ever
    /// (the test process would wait for its child in vain).
    func release() {
      guard
        let status = try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8),
        !status.contains("Threads:\t1\n")
      else { return }
      let abort = open("/sys/fs/fuse/connections/\(connection)/abort", O_WRONLY | O_CLOEXEC)
      guard abort >= 0 else { return }
      _ = Glibc.write(abort, "1", 1)
      close(abort)
    }
  }

  /// Mounts the stand-in on `device`'s mount point and state, kills it, and checks that it
  /// is stuck: a zombie with a thread left, which still holds the state folder's lock.
  private func stuckMount(of device: Device) throws -> Stuck {
    let process = try BackgroundProcess(
      ["python3", "-c", Self.stuckDaemon, device.mountPoint, device.state])
    try process.waitForOutput("stuck")
    let connection = try String(
      contentsOfFile: "\(device.state)/docsync.connection", encoding: .utf8
    ).trimmingCharacters(in: .whitespacesAndNewlines)
    let stuck = Stuck(process: process, connection: connection)
    #expect(MountFixture.mountedPoints().contains(device.mountPoint))
    kill(process.pid, SIGKILL)
    usleep(500_000)
    let status = try String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8)
    guard status.contains("State:\tZ"), status.contains("Threads:\t2") else {
      stuck.release()
      throw TestFailure("the stand-in is not stuck: \(status)")
    }
    return stuck
  }

  /// A device with a synced file, unmounted, whose state the killed, stuck stand-in holds.
  private func stuckLaptop(_ library: Library) throws -> (Device, Stuck) {
    let a = try library.device("laptop")
    try write(a.path("kept.txt"), "kept\n")
    try a.sync()
    try a.unmount()
    return (a, try stuckMount(of: a))
  }

  @Test(
    "docsync unmount ends a killed daemon stuck in its own mount, and the folder mounts again",
    .needs("python3"), .docsyncOnly)
  func unmountEndsAStuckDaemon() throws {
    try Library.with(programs: ["python3"]) { library in
      let (a, stuck) = try stuckLaptop(library)
      defer { stuck.release() }
      let unmounted = try run(
        [try MountFixture.docsyncBinary(), "unmount", a.mountPoint], env: a.environment,
        timeout: .seconds(60))
      #expect(unmounted.status == 0, "\(unmounted)")
      #expect(try stuck.process.wait(timeout: .seconds(10)) != 0)
      #expect(!MountFixture.mountedPoints().contains(a.mountPoint))
      try a.mount()
      #expect(try read(a.path("kept.txt")) == "kept\n")
    }
  }

  @Test(
    """
    docsync mount of a state folder held by a killed daemon that cannot exit ends it, says so, \
    and serves the folder
    """,
    .needs("python3"), .docsyncOnly)
  func mountEndsAStuckDaemon() throws {
    try Library.with(programs: ["python3"]) { library in
      let (a, stuck) = try stuckLaptop(library)
      defer { stuck.release() }
      // A person who found the mount dead and let it go lazily: the process still holds the
      // state folder.
      try check(["fusermount3", "-uz", a.mountPoint])
      let mounted = try a.mount()
      #expect(
        mounted.stderr.contains("the killed docsync process \(stuck.process.pid) could not exit"),
        "\(mounted)")
      #expect(try stuck.process.wait(timeout: .seconds(10)) != 0)
      #expect(try read(a.path("kept.txt")) == "kept\n")
    }
  }

  @Test(
    "A state folder held by a live mount is still refused, and its mount keeps serving",
    .docsyncOnly)
  func aLiveHolderIsNeverAborted() throws {
    try Library.with { library in
      let a = try library.device("laptop")
      try write(a.path("kept.txt"), "kept\n")
      let other = "\(a.mountPoint)-other"
      try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(atPath: other) }
      let refused = try run(
        [try MountFixture.docsyncBinary(), "mount", other, "--state", a.state, "--hub", a.hub],
        env: a.environment, timeout: .seconds(60))
      #expect(refused.status != 0)
      #expect(refused.stderr.contains("is in use by another docsync mount"), "\(refused)")
      #expect(try read(a.path("kept.txt")) == "kept\n")
    }
  }
}
