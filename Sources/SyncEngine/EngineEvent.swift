import DocumentModel

/// Something a person or a script may want to hear about, as `docsync events` reports it.
public struct EngineEvent: Sendable, Equatable {
  /// What happened.
  public enum Kind: Sendable, Equatable {
    /// `path` has conflict versions it did not have before (`added`); `versions` is how many
    /// it has now, and `devices` the devices of every head, the current one's first.
    case conflict(path: DocumentPath, added: [VersionRecord], versions: Int, devices: [String])
    /// Conflict versions of `path` are gone; `remaining` is how many are left.
    case resolved(path: DocumentPath, how: ResolutionKind, by: String, remaining: Int)
    /// A conflict that docsync merged by itself, as `.docsyncattributes` asks.
    case merged(path: DocumentPath, devices: [String])
    /// The hub cannot be reached; the mount keeps working and retries.
    case offline(reason: String)
    /// The hub answers again after being unreachable since `since` (wall milliseconds).
    case online(since: UInt64)
    /// The hub answers, but this device cannot store or read what it syncs (its disk is
    /// full); the mount keeps working and retries.
    case failing(reason: String)
    /// Syncing works again after failing here since `since` (wall milliseconds).
    case recovered(since: UInt64)
    /// A version saved here cannot be uploaded: its content cannot be read on this device and
    /// the file has changed since. Posted once per version; `docsync sync` tries it again.
    case heldBack(path: DocumentPath)
    /// A record from another device failed its checks and was not stored.
    case refused(version: String, path: String, device: String, reason: String)
    /// A direction went idle after moving `files` versions' content, `bytes` in all.
    case transferred(direction: Direction, files: Int, bytes: UInt64)
  }

  /// How a conflict ended, read from the version that ended it.
  public enum ResolutionKind: String, Sendable, Equatable {
    /// A conflict version's content became current (`cp`/`mv` of it over the document).
    case chose
    /// The current content was kept and conflict versions were removed (`rm` in `.versions`).
    case kept
    /// New content that follows the heads (`merged<ext>` or an edit by hand) became current.
    case merged
    /// The document was deleted.
    case deleted
  }

  /// Which way content moved.
  public enum Direction: String, Sendable, Equatable {
    case upload
    case download
  }

  /// Position in this mount's stream of events, from 1; a subscriber resumes after it.
  public let sequence: UInt64
  /// Wall-clock milliseconds when the engine noticed it.
  public let time: UInt64
  public let kind: Kind

  public init(sequence: UInt64, time: UInt64, kind: Kind) {
    self.sequence = sequence
    self.time = time
    self.kind = kind
  }
}
