/// The master key wrapped under a passphrase: the Argon2id parameters and salt that turn the
/// passphrase into the wrapping key, and the wrap.
public struct PassphraseWrap: Sendable, Hashable {
  public let parameters: PassphraseParameters
  public let salt: [UInt8]
  public let wrapped: WrappedKey

  public init(parameters: PassphraseParameters, salt: [UInt8], wrapped: WrappedKey) {
    self.parameters = parameters
    self.salt = salt
    self.wrapped = wrapped
  }
}
