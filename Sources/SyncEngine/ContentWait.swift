/// Why a path still shows its last good content: the content of its new version is not here.
public enum ContentWait: String, Sendable, Equatable, Codable {
  /// Being fetched from the hub.
  case fetching
  /// The local copy failed its check and was dropped; it is being fetched again.
  case damagedHere = "damaged here"
  /// The hub's copy failed its check; the hub dropped it and waits for a device that has the
  /// content to put it again.
  case damagedOnHub = "damaged on the hub"
  /// The hub does not have it; a device that has the content puts it when it syncs.
  case missingOnHub = "missing on the hub"
}
