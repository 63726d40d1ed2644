/// One key epoch in the envelope: its number and its key, wrapped under the master key so that
/// whoever unlocks the library (a joining device, the recovery key) reads every epoch.
public struct EnvelopeEpoch: Sendable, Hashable {
  public let epoch: UInt32
  public let wrapped: WrappedKey

  public init(epoch: UInt32, wrapped: WrappedKey) {
    self.epoch = epoch
    self.wrapped = wrapped
  }
}
