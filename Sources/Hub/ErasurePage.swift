/// One page of erasures and the cursor that follows it.
public struct ErasurePage: Sendable, Hashable {
  /// Erasures in the order the hub made them.
  public var erasures: [Erasure]
  /// Where the next page starts; equal to the cursor asked for when the page is empty.
  public var cursor: HubCursor

  public init(erasures: [Erasure], cursor: HubCursor) {
    self.erasures = erasures
    self.cursor = cursor
  }
}
