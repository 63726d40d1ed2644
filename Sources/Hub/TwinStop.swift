import Synchronization

/// A place in a blob's conversion where a test stops it, as a crash would: the conversion
/// throws there and does nothing more, so that what it leaves can be checked and converted
/// again.
public final class TwinStop: Sendable {
  /// The steps of one blob's conversion, in order.
  public enum Step: Sendable, Hashable, CaseIterable {
    /// Nothing done for this blob yet.
    case beforeCutting
    /// Its objects are put; the twin is not recorded.
    case beforeRecording
    /// The twin is recorded and the blob's row gone; its file is still there.
    case beforeRemovingFile
  }

  private let armed = Mutex<Step?>(nil)

  public init() {}

  /// Stops the next conversion that reaches `step` (once), or none when nil.
  public func arm(_ step: Step?) {
    armed.withLock { $0 = step }
  }

  /// Throws when a test armed this step, and disarms it.
  package func reached(_ step: Step) throws(HubError) {
    let stop = armed.withLock { armed -> Bool in
      guard armed == step else { return false }
      armed = nil
      return true
    }
    if stop { throw .failed("conversion stopped \(step) for a test") }
  }
}
