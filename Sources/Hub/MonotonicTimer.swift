import Foundation
import Glibc
import Synchronization

/// Sleeps measured on `CLOCK_MONOTONIC`, served by one thread that waits with poll(2)'s relative
/// timeout: what every deadline and timed wait of docsync uses instead of `Task.sleep`.
///
/// `Task.sleep` arms a dispatch timer at an absolute time (`timerfd_settime` with
/// `TFD_TIMER_ABSTIME` on `CLOCK_MONOTONIC` or `CLOCK_BOOTTIME`). libfaketime, which emulates a
/// device whose clock is hours off, moves that absolute time by its offset even with
/// `FAKETIME_DONT_FAKE_MONOTONIC=1` (measured: a 200 ms timer armed under `FAKETIME=-2h` reported
/// 7200 s left). Every timed sleep of the daemon then lasted two hours, and `docsync sync` on a
/// device two hours behind never returned, `--timeout` included. A relative timeout, recomputed
/// from `CLOCK_MONOTONIC` after each wake-up, is left alone by clock emulations and by steps of
/// the wall clock.
public final class MonotonicTimer: Sendable {
  /// The process's timer; its thread starts at first use.
  public static let shared = MonotonicTimer()

  private struct Sleeper {
    var deadline: UInt64
    var continuation: CheckedContinuation<Void, Never>
  }

  private struct State {
    var sleepers: [Int: Sleeper] = [:]
    var nextID = 0
  }

  private let state = Mutex(State())
  /// A pipe that a new sleeper writes a byte to, so the thread recomputes its timeout.
  private let wakeReader: Int32
  private let wakeWriter: Int32

  private init() {
    var ends: [Int32] = [-1, -1]
    pipe(&ends)
    for end in ends {
      _ = fcntl(end, F_SETFD, FD_CLOEXEC)
      _ = fcntl(end, F_SETFL, O_NONBLOCK)
    }
    (wakeReader, wakeWriter) = (ends[0], ends[1])
    let thread = Thread { [self] in serve() }
    thread.name = "docsync-timer"
    thread.start()
  }

  /// Nanoseconds on `CLOCK_MONOTONIC`.
  public static func now() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }

  /// The monotonic time (nanoseconds) `duration` from now; a negative duration is now.
  public static func deadline(after duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    let now = now()
    guard seconds >= 0, attoseconds >= 0 else { return now }
    let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
    let (length, longer) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
    let (deadline, late) = now.addingReportingOverflow(length)
    return overflow || longer || late ? .max : deadline
  }

  /// Returns after `duration`, or at once when the task is cancelled (as `try? Task.sleep`).
  public func sleep(for duration: Duration) async {
    guard duration > .zero else { return }
    await sleep(until: Self.deadline(after: duration))
  }

  /// Returns once `CLOCK_MONOTONIC` reaches `deadline` (nanoseconds), or at once on cancellation.
  public func sleep(until deadline: UInt64) async {
    let id = state.withLock { state in
      state.nextID += 1
      return state.nextID
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let now = state.withLock { state -> Bool in
          if Task.isCancelled { return true }
          state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
          return false
        }
        if now {
          continuation.resume()
        } else {
          // A full pipe already holds a wake-up: the byte may be dropped.
          var one: UInt8 = 1
          _ = write(wakeWriter, &one, 1)
        }
      }
    } onCancel: {
      state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume()
    }
  }

  private func serve() {
    while true {
      let now = Self.now()
      let (due, next) = state.withLock { state -> ([Sleeper], UInt64?) in
        let due = state.sleepers.filter { $0.value.deadline <= now }
        for id in due.keys { state.sleepers[id] = nil }
        return (Array(due.values), state.sleepers.values.map(\.deadline).min())
      }
      for sleeper in due { sleeper.continuation.resume() }
      // Rounded up, so a sleeper is never woken before its deadline and the loop never spins.
      let timeout = next.map { Int32(clamping: ($0 - now + 999_999) / 1_000_000) } ?? -1
      var descriptor = pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0)
      if poll(&descriptor, 1, timeout) > 0 {
        var bytes = [UInt8](repeating: 0, count: 64)
        _ = read(wakeReader, &bytes, bytes.count)
      }
    }
  }
}
