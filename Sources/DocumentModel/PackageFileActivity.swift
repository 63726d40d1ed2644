/// What the mount knows of one file in a package when a snapshot is considered: whether a
/// program has it open for writing, and when it last changed.
public struct PackageFileActivity: Hashable, Sendable {
  /// The path inside the package.
  public let path: DocumentPath
  /// Open file descriptions that may write to it (open for writing, or mapped shared and
  /// writable).
  public let writers: Int
  /// When it last changed (content, size, mode, time, or its name), in the engine's monotonic
  /// milliseconds.
  public let lastChange: UInt64

  public init(path: DocumentPath, writers: Int, lastChange: UInt64) {
    self.path = path
    self.writers = writers
    self.lastChange = lastChange
  }
}
