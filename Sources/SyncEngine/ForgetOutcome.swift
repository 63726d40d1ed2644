/// What a `docsync forget` removed: how many documents, and how many versions of them.
public struct ForgetOutcome: Sendable, Equatable {
  public var documents: Int
  public var versions: Int

  public init(documents: Int, versions: Int) {
    self.documents = documents
    self.versions = versions
  }
}
