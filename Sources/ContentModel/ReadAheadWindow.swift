/// How far past a read a device fetches content that is not here: nothing more for a read that
/// jumps about, a window that doubles while reads follow each other (a `cp`, a video played),
/// up to a ceiling. One per open file; pure, so the policy is tested without a hub.
public struct ReadAheadWindow: Sendable, Hashable {
  /// The first window past a read that follows the previous one.
  public let initial: UInt64
  /// The largest window.
  public let maximum: UInt64
  /// Where the last read ended, and the window it used.
  private var lastEnd: UInt64?
  private var window: UInt64 = 0

  public static let standard = ReadAheadWindow(initial: 1 << 20, maximum: 32 << 20)

  public init(initial: UInt64, maximum: UInt64) {
    precondition(initial > 0 && maximum >= initial)
    self.initial = initial
    self.maximum = maximum
  }

  /// The bytes to have here for a read of `read` in a content of `size` bytes: the read itself,
  /// and the window past it when the read starts where the previous one ended (or within the
  /// window fetched for it, as the kernel splits a large read and reads ahead itself).
  public mutating func plan(_ read: Range<UInt64>, size: UInt64) -> Range<UInt64> {
    let start = min(read.lowerBound, size)
    let end = min(read.upperBound, size)
    let sequential: Bool
    if let lastEnd {
      sequential = start >= lastEnd.subtractingClamped(window) && start <= lastEnd + window
    } else {
      sequential = start == 0
    }
    window = sequential ? (window == 0 ? initial : min(window * 2, maximum)) : 0
    lastEnd = end
    let (ahead, overflow) = end.addingReportingOverflow(window)
    return start..<(overflow ? size : min(ahead, size))
  }
}

extension UInt64 {
  fileprivate func subtractingClamped(_ other: UInt64) -> UInt64 {
    self >= other ? self - other : 0
  }
}
