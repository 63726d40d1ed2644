import CFuse
import CFuseIO
import Glibc
import Synchronization
import SystemPackage

/// Why a `Session` could not start or serve, with the mount point where it matters.
public enum SessionError: Error, Equatable, CustomStringConvertible {
  /// fuse_session_new refused the arguments (libfuse printed which one to stderr).
  case invalidOptions([String])
  case mountPointUnusable(String, Errno)
  case mountPointNotDirectory(String)
  /// /dev/fuse cannot be opened: no FUSE module, or no permission.
  case deviceUnavailable(Errno)
  /// fuse_session_mount failed (libfuse printed the reason to stderr).
  case mountFailed(String)
  case alreadyMounted(String)
  case notMounted(String)
  case signalHandlersFailed(Errno)
  /// fuse_session_loop_mt stopped on an error rather than an unmount or an exit request.
  case loopFailed(Errno)

  public var description: String {
    switch self {
    case .invalidOptions(let arguments):
      return "libfuse refused the options \(arguments.joined(separator: " "))"
    case .mountPointUnusable(let path, let error):
      return "cannot use mount point \(path): \(error)"
    case .mountPointNotDirectory(let path):
      return "mount point \(path) is not a directory"
    case .deviceUnavailable(let error):
      return "cannot open /dev/fuse: \(error)"
    case .mountFailed(let path):
      return "could not mount at \(path) (is it already a mount point, or in use?)"
    case .alreadyMounted(let path):
      return "\(path) is already mounted by this session"
    case .notMounted(let path):
      return "\(path) is not mounted by this session"
    case .signalHandlersFailed(let error):
      return "cannot install signal handlers: \(error)"
    case .loopFailed(let error):
      return "the FUSE session stopped: \(error)"
    }
  }
}

/// Why `Session.run()` returned.
public enum SessionEnd: Sendable, Equatable {
  /// The file system was unmounted (fusermount3 -u, umount).
  case unmounted
  /// `requestExit()` was called; the mount is still there until `unmount()`.
  case exitRequested
  /// SIGTERM, SIGINT or SIGHUP arrived after `installSignalHandlers()`; still mounted.
  case signal(Int32)
}

/// The libfuse session and the box its callbacks reach; freed only when the last of the
/// `Session` and its `KernelNotifier`s is gone, so a late notification never touches freed memory.
final class NativeSession: @unchecked Sendable {
  let pointer: OpaquePointer
  let box: SessionBox

  init(pointer: OpaquePointer, box: SessionBox) {
    self.pointer = pointer
    self.box = box
  }

  deinit {
    // Calls the file system's destroy() when the kernel had initialised the session.
    fuse_session_destroy(pointer)
  }
}

/// A FUSE mount served by a `LowLevelFileSystem` on libfuse's multi-threaded loop.
///
/// Usage: `init`, `mount()`, optionally `installSignalHandlers()`, `run()` (blocks until the
/// mount goes away, `requestExit()`, or a signal), then flush what is pending and `unmount()`.
/// The file system's `destroy()` is called when the session is released.
///
/// Open never sees O_TRUNC: truncation arrives as `setAttributes` with a size of 0.
public final class Session: Sendable {
  public let options: SessionOptions
  /// Invalidates kernel caches; see `KernelNotifier` for which threads may use it.
  public let notifier: KernelNotifier
  private let native: NativeSession
  private let state = Mutex(State())

  private struct State: Sendable {
    var mounted = false
    var loopThread: pthread_t?
    var exitRequested = false
    var ownsSignals = false
  }

  public init(fileSystem: any LowLevelFileSystem, options: SessionOptions) throws {
    let box = SessionBox(fileSystem: fileSystem, options: options)
    let arguments = options.arguments
    var fuseArguments = fuse_args(argc: 0, argv: nil, allocated: 0)
    defer { fuse_opt_free_args(&fuseArguments) }
    for argument in arguments where fuse_opt_add_arg(&fuseArguments, argument) != 0 {
      throw SessionError.invalidOptions(arguments)
    }
    var operations = makeOperations()
    let userdata = Unmanaged.passUnretained(box).toOpaque()
    guard
      let pointer = fuse_session_new(
        &fuseArguments, &operations, MemoryLayout<fuse_lowlevel_ops>.size, userdata)
    else {
      throw SessionError.invalidOptions(arguments)
    }
    box.backingFiles.attach(pointer)
    native = NativeSession(pointer: pointer, box: box)
    notifier = KernelNotifier(native: native)
    self.options = options
  }

  deinit {
    let current = state.withLock { $0 }
    if current.ownsSignals { restoreSignalHandlers() }
    if current.mounted { fuse_session_unmount(native.pointer) }
  }

  /// Mounts at `options.mountPoint`; the kernel queues requests until `run()` serves them.
  public func mount() throws {
    let path = options.mountPoint
    try state.withLock { state in
      if state.mounted { throw SessionError.alreadyMounted(path) }
      var status = stat()
      if stat(path, &status) != 0 {
        throw SessionError.mountPointUnusable(path, .fromCErrno())
      }
      if status.st_mode & S_IFMT != S_IFDIR { throw SessionError.mountPointNotDirectory(path) }
      // libfuse only prints why it failed; checking the device first gives the caller a reason.
      let device = open("/dev/fuse", O_RDWR | O_CLOEXEC)
      if device < 0 { throw SessionError.deviceUnavailable(.fromCErrno()) }
      close(device)
      if fuse_session_mount(native.pointer, path) != 0 { throw SessionError.mountFailed(path) }
      state.mounted = true
      // Only a process with CAP_SYS_ADMIN may register backing files; asking for passthrough
      // otherwise would only make every open fall back.
      let passthrough = options.passthrough && geteuid() == 0
      _ = cfuse_io_install(
        native.pointer, passthrough ? 1 : 0, options.ioUring ? 1 : 0,
        options.handleKillPrivileges ? 1 : 0)
    }
  }

  /// Serves requests on libfuse's worker threads until unmounted, `requestExit()`, or a signal.
  @discardableResult
  public func run() throws -> SessionEnd {
    let thread = pthread_self()
    let ownsSignals = try state.withLock { state in
      if !state.mounted { throw SessionError.notMounted(options.mountPoint) }
      state.loopThread = thread
      return state.ownsSignals
    }
    installWakeHandler()
    unblockSignals(ownsSignals ? [wakeSignal, SIGTERM, SIGINT, SIGHUP] : [wakeSignal])
    if ownsSignals { signalLoopThread.store(UInt(thread), ordering: .sequentiallyConsistent) }
    // An exit requested before the loop thread was known must not be lost.
    if state.withLock({ $0.exitRequested }) { fuse_session_exit(native.pointer) }

    let configuration = fuse_loop_cfg_create()
    fuse_loop_cfg_set_idle_threads(configuration, options.maxIdleThreads)
    fuse_loop_cfg_set_max_threads(configuration, options.maxThreads)
    let result = fuse_session_loop_mt(native.pointer, configuration)
    fuse_loop_cfg_destroy(configuration)
    // The ring threads hand requests to the session too: they stop with the loop, before the
    // session can be destroyed.
    cfuse_io_uring_stop()

    if ownsSignals { signalLoopThread.store(0, ordering: .sequentiallyConsistent) }
    let exitRequested = state.withLock { state in
      state.loopThread = nil
      defer { state.exitRequested = false }
      return state.exitRequested
    }
    if result < 0 { throw SessionError.loopFailed(Errno(rawValue: -result)) }
    if ownsSignals {
      let signal = receivedSignal.exchange(0, ordering: .sequentiallyConsistent)
      if signal != 0 { return .signal(signal) }
    }
    // libfuse's own signal handler (not used here) reports the signal as a positive result.
    if result > 0 { return .signal(result) }
    return exitRequested ? .exitRequested : .unmounted
  }

  /// How many requests came from FUSE over io_uring rather than /dev/fuse (one process-wide
  /// count: a process serves one session).
  public var ioUringRequests: UInt64 { cfuse_io_uring_requests() }

  /// How many io_uring queues served requests: one per possible CPU, or 0 when requests came
  /// only through /dev/fuse.
  public var ioUringQueues: Int { cfuse_io_uring_state() > 0 ? Int(cfuse_io_uring_queues()) : 0 }

  /// Ends `run()` soon, from any thread; the mount stays until `unmount()`.
  public func requestExit() {
    let thread = state.withLock { state in
      state.exitRequested = true
      return state.loopThread
    }
    fuse_session_exit(native.pointer)
    // The loop thread sleeps in sem_wait until a worker finishes; a signal interrupts it
    // (sem_wait is never restarted, signal(7)), and it then sees the exit flag.
    if let thread { pthread_kill(thread, wakeSignal) }
  }

  /// Unmounts (lazily, so a busy mount still goes); call after `run()` returned.
  public func unmount() {
    let wasMounted = state.withLock { state in
      defer { state.mounted = false }
      return state.mounted
    }
    if wasMounted { fuse_session_unmount(native.pointer) }
  }

  /// Makes SIGTERM, SIGINT and SIGHUP end `run()` (returning `.signal`) instead of killing the
  /// process, so the caller can flush and unmount; SIGPIPE is ignored. One session at a time.
  ///
  /// Not libfuse's fuse_set_signal_handlers: its handler only sets the exit flag, and when the
  /// signal lands on another thread than the loop's (any thread of the process may take it)
  /// the loop keeps sleeping; this handler also wakes the loop thread.
  public func installSignalHandlers() throws {
    try state.withLock { state in
      if state.ownsSignals { return }
      signalSession.store(UInt(bitPattern: native.pointer), ordering: .sequentiallyConsistent)
      if let thread = state.loopThread {
        signalLoopThread.store(UInt(thread), ordering: .sequentiallyConsistent)
      }
      installWakeHandler()
      var action = sigaction()
      action.__sigaction_handler.sa_handler = { signal in handleTerminationSignal(signal) }
      sigemptyset(&action.sa_mask)
      for signal in [SIGTERM, SIGINT, SIGHUP] where sigaction(signal, &action, nil) != 0 {
        throw SessionError.signalHandlersFailed(.fromCErrno())
      }
      // A reply written to a connection the kernel already closed must not kill the process.
      signal(SIGPIPE, SIG_IGN)
      unblockSignals([wakeSignal, SIGTERM, SIGINT, SIGHUP])
      state.ownsSignals = true
    }
  }

  private func restoreSignalHandlers() {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = SIG_DFL
    sigemptyset(&action.sa_mask)
    for signal in [SIGTERM, SIGINT, SIGHUP] { sigaction(signal, &action, nil) }
    signalSession.store(0, ordering: .sequentiallyConsistent)
    signalLoopThread.store(0, ordering: .sequentiallyConsistent)
  }
}

/// Interrupts the loop thread's sem_wait; its handler does nothing.
private let wakeSignal = SIGUSR2

// Read by the signal handler, so plain atomics (async-signal-safe), written before the handler
// is installed so that their lazy initialisation never runs inside it.
private let signalSession = Atomic<UInt>(0)
private let signalLoopThread = Atomic<UInt>(0)
private let receivedSignal = Atomic<Int32>(0)
private let wakeHandlerInstalled = Mutex(false)

private func handleTerminationSignal(_ signal: Int32) {
  receivedSignal.store(signal, ordering: .sequentiallyConsistent)
  if let session = OpaquePointer(bitPattern: signalSession.load(ordering: .sequentiallyConsistent))
  {
    fuse_session_exit(session)
  }
  let loop = signalLoopThread.load(ordering: .sequentiallyConsistent)
  if loop != 0 && loop != UInt(pthread_self()) {
    pthread_kill(pthread_t(loop), wakeSignal)
  }
}

/// Unblocks `signals` on the calling thread. A process may start with them blocked: Foundation's
/// Process on Linux hands its own mask to the child (seen in MemoryFSMountTests: SigBlk
/// fffffffe3bfbea27 and SIGTERM left pending), and a blocked signal never ends the loop.
private func unblockSignals(_ signals: [Int32]) {
  var set = sigset_t()
  sigemptyset(&set)
  for signal in signals { sigaddset(&set, signal) }
  pthread_sigmask(SIG_UNBLOCK, &set, nil)
}

/// Installs the do-nothing wake handler once, unless the process already handles the signal
/// (any handler interrupts sem_wait just as well).
private func installWakeHandler() {
  _ = receivedSignal.load(ordering: .relaxed)
  wakeHandlerInstalled.withLock { installed in
    if installed { return }
    var current = sigaction()
    sigaction(wakeSignal, nil, &current)
    let handler = unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
    if handler == unsafeBitCast(SIG_DFL, to: Int.self)
      || handler == unsafeBitCast(SIG_IGN, to: Int.self)
    {
      var action = sigaction()
      action.__sigaction_handler.sa_handler = { _ in }
      sigemptyset(&action.sa_mask)
      // No SA_RESTART: the point is to interrupt.
      action.sa_flags = 0
      sigaction(wakeSignal, &action, nil)
    }
    installed = true
  }
}
