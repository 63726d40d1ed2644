/// Why a library's keys could not be opened, read or used: each is one line a person can act
/// on, and none is a crash, whatever bytes a hub or a key file holds.
public enum KeyError: Error, Sendable, Hashable, CustomStringConvertible {
  case wrongPassphrase
  case emptyPassphrase
  case wrongRecoveryKey
  /// A recovery key that cannot be one: a character outside the alphabet, the wrong length,
  /// or a group whose check character does not match (a typo in that group).
  case malformedRecoveryKey(String)
  /// Bytes that are not a key envelope this docsync can read.
  case malformedEnvelope(String)
  /// An envelope of a later format, made by a newer docsync.
  case newerEnvelope(UInt8)
  /// An envelope whose signature does not verify: changed by someone without the master key.
  case envelopeNotSigned
  /// An envelope older than one this device has seen: a hub serving an earlier state.
  case envelopeRolledBack(seen: UInt64, served: UInt64)
  case otherLibrary
  case deviceRemoved
  case unknownDevice(String)
  case passphraseParameters(String)
  case malformedKeyFile(String)
  case keyFileTooOpen(String, UInt32)
  case keyFile(String, String)
  /// Sealed record fields that do not open: damaged, moved to another record, or forged.
  case recordRefused(String)

  public var description: String {
    switch self {
    case .wrongPassphrase: "the passphrase does not unlock this library"
    case .emptyPassphrase: "a passphrase cannot be empty"
    case .wrongRecoveryKey: "the recovery key does not unlock this library"
    case .malformedRecoveryKey(let reason): "that is not a recovery key: \(reason)"
    case .malformedEnvelope(let reason): "the library's key envelope is malformed: \(reason)"
    case .newerEnvelope(let format):
      "the library's key envelope has format \(format), made by a newer docsync (upgrade it)"
    case .envelopeNotSigned:
      "the library's key envelope was changed by someone without its keys (refused)"
    case .envelopeRolledBack(let seen, let served):
      "the hub serves the library's keys as of change \(served), older than change \(seen) seen here (refused)"
    case .otherLibrary: "these keys belong to another library"
    case .deviceRemoved:
      "this device was removed from the library: join it again with the passphrase"
    case .unknownDevice(let device): "device \(device) is not one of the library's devices"
    case .passphraseParameters(let reason): "unusable passphrase parameters: \(reason)"
    case .malformedKeyFile(let reason): "not a docsync device key file: \(reason)"
    case .keyFileTooOpen(let path, let mode):
      "\(path) is open to other users (mode \(String(mode, radix: 8))): run chmod 600 on it"
    case .keyFile(let path, let reason): "cannot use the key file \(path): \(reason)"
    case .recordRefused(let reason): "a sealed record was refused: \(reason)"
    }
  }
}
