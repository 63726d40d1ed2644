import Hub

/// Opens the hub `location` names: a `postgres://` or `postgresql://` URL, else what
/// `openHub(location:)` of the Hub module opens (a SQLite hub file).
///
/// It lives here because only PostgresHub may import postgres-nio, and PostgresHub depends on
/// Hub, not the other way round.
public func openAnyHub(location: String) throws(HubError) -> any Hub {
  let lowered = location.lowercased()
  if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
    return try PostgresHub(location: location)
  }
  return try openHub(location: location)
}
