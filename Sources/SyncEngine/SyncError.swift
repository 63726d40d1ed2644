import Hub
import LocalStore

/// Why a sync step failed.
public enum SyncError: Error, Sendable, CustomStringConvertible, Equatable {
  case local(String)
  case hub(String)
  case timeout(String)
  case paused

  public var description: String {
    switch self {
    case .local(let reason): reason
    case .hub(let reason): reason
    case .timeout(let reason): reason
    case .paused: "syncing is paused (docsync resume)"
    }
  }

  /// A hub call's failure: the caller's own file's (a full disk here) is local, and so is a hub
  /// that answered but needs a newer docsync (this device cannot do its part until upgraded);
  /// any other is the hub's.
  init(_ error: HubError) {
    switch error {
    case .local(let reason): self = .local(reason)
    case .needsNewerDocsync: self = .local(error.description)
    default: self = .hub(error.description)
    }
  }
}

extension SyncError {
  /// A failure of this device's content store: always local.
  init(_ error: ContentError) {
    self = .local(error.description)
  }
}
