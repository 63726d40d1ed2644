/// Why the content store could not do what it was asked: always this device's trouble (a full
/// disk, a failing one), never the hub's.
public struct ContentError: Error, Sendable, CustomStringConvertible {
  public let description: String

  init(_ description: String) {
    self.description = description
  }
}
