/// The epoch keys a device holds for a library: every epoch it may read, and the current one,
/// which names and seals whatever it makes now.
public struct LibraryKeyring: Sendable {
  public let library: [UInt8]
  /// The envelope's generation these keys come from.
  public let generation: UInt64
  public let epochs: [UInt32: EpochKeys]
  public let current: EpochKeys

  init(library: [UInt8], generation: UInt64, epochs: [EpochKeys]) {
    self.library = library
    self.generation = generation
    self.epochs = Dictionary(uniqueKeysWithValues: epochs.map { ($0.epoch, $0) })
    current = epochs.max { $0.epoch < $1.epoch }!
  }

  public func keys(for epoch: UInt32) -> EpochKeys? { epochs[epoch] }
}
