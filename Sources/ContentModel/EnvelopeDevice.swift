import DocumentModel

/// One device of the library in the envelope: its X25519 public key and every epoch key sealed
/// to it (libsodium's sealed boxes), which is how a device that never learns the master key
/// reads the epochs started after it joined.
public struct EnvelopeDevice: Sendable, Hashable {
  public let device: DeviceID
  public let publicKey: [UInt8]
  /// Epoch number → the epoch key sealed to ``publicKey`` (80 bytes).
  public let sealedKeys: [UInt32: [UInt8]]

  public init(device: DeviceID, publicKey: [UInt8], sealedKeys: [UInt32: [UInt8]]) {
    self.device = device
    self.publicKey = publicKey
    self.sealedKeys = sealedKeys
  }
}
