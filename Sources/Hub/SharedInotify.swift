import Dispatch
import Glibc
import Synchronization

/// One inotify instance for the whole process, shared by every folder it watches.
///
/// The kernel gives each user 128 instances (`fs.inotify.max_user_instances`). With one per
/// hub, a process that opened many hubs at once (the in-process tests reached 128 within
/// seconds) got none for the next one, and that hub never heard of another's commit.
final class SharedInotify: @unchecked Sendable {
  static let shared = SharedInotify()

  private struct Subscriber {
    var wanted: Set<[UInt8]>
    var signal: ChangeSignal
  }

  private struct State {
    var descriptor: Int32 = -1
    var source: (any DispatchSourceRead)?
    var subscribers: [Int32: [Int: Subscriber]] = [:]
    var nextID = 0
  }

  private let state = Mutex(State())

  static let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO)

  /// A first write of a burst is signalled at once; a large upload writes the journal
  /// thousands of times a second, and pausing after a signal lets those events gather into
  /// the next drain, so waiters look at most about 200 times a second.
  static let pauseMicroseconds: UInt32 = 5_000

  /// Signals `signal` whenever one of `names` in `directory` is written, created or renamed
  /// into place; nil when inotify is unavailable (no descriptor left, a kernel without it).
  func subscribe(directory: String, names: Set<String>, signal: ChangeSignal)
    -> (watch: Int32, id: Int)?
  {
    state.withLock { state in
      if state.descriptor < 0 {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let source = DispatchSource.makeReadSource(
          fileDescriptor: fd, queue: DispatchQueue(label: "docsync.hub.watch"))
        source.setEventHandler { [self] in drain(fd) }
        source.resume()
        state.descriptor = fd
        state.source = source
      }
      // The same folder gives the same watch: its subscribers share it.
      let watch = inotify_add_watch(state.descriptor, directory, Self.mask)
      guard watch >= 0 else { return nil }
      state.nextID += 1
      state.subscribers[watch, default: [:]][state.nextID] = Subscriber(
        wanted: Set(names.map { Array($0.utf8) }), signal: signal)
      return (watch, state.nextID)
    }
  }

  func unsubscribe(watch: Int32, id: Int) {
    state.withLock { state in
      state.subscribers[watch]?[id] = nil
      if state.subscribers[watch]?.isEmpty == true {
        state.subscribers[watch] = nil
        _ = inotify_rm_watch(state.descriptor, watch)
      }
    }
  }

  /// Reads every queued event, then signals the subscribers that an event names: the table
  /// is looked at once per drain, however many events a burst of writes queued.
  private func drain(_ fd: Int32) {
    let headerSize = MemoryLayout<inotify_event>.size
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    var written: [Int32: Set<[UInt8]>] = [:]
    var ignored: Set<Int32> = []
    var overflowed = false
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      // EAGAIN once drained; EINTR is retried by the next readiness event.
      guard count > 0 else { break }
      var offset = 0
      while offset + headerSize <= count {
        let (watch, mask, nameLength) = buffer.withUnsafeBytes {
          (
            $0.loadUnaligned(fromByteOffset: offset, as: Int32.self),
            $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
            Int($0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
          )
        }
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
          overflowed = true
        } else if mask & UInt32(IN_IGNORED) != 0 {
          ignored.insert(watch)
        } else {
          let name = buffer[(offset + headerSize)..<min(count, offset + headerSize + nameLength)]
          written[watch, default: []].insert(Array(name.prefix { $0 != 0 }))
        }
        offset += headerSize + nameLength
      }
    }
    let chosen = state.withLock { state -> [Subscriber] in
      var chosen: [Subscriber] = []
      if overflowed {
        // The queue lost events: any of them may have been a commit, of anyone's.
        chosen = state.subscribers.values.flatMap(\.values)
      } else {
        for (watch, names) in written {
          chosen += (state.subscribers[watch] ?? [:]).values.filter {
            !$0.wanted.isDisjoint(with: names)
          }
        }
      }
      for watch in ignored { state.subscribers[watch] = nil }
      return chosen
    }
    // One hub's signal once, though several of its files changed.
    let signals = Dictionary(
      chosen.map { (ObjectIdentifier($0.signal), $0.signal) },
      uniquingKeysWith: { first, _ in first }
    ).values
    guard !signals.isEmpty else { return }
    for signal in signals { signal.signal() }
    usleep(Self.pauseMicroseconds)
  }
}
