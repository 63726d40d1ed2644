import Hub
import PostgresHub

/// Opens the hub `location` names, a `postgres://` or `postgresql://` URL included.
///
/// The Hub module's `openHub(location:)` cannot open the PostgreSQL hub itself: only PostgresHub
/// may import postgres-nio, and it depends on Hub, not the other way round.
func openAnyHub(location: String) throws(HubError) -> any Hub {
  let lowered = location.lowercased()
  if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
    return try PostgresHub(location: location)
  }
  return try openHub(location: location)
}
