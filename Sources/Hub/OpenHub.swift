import Foundation

/// Opens the hub that `location` names: a file path for the SQLite hub, or a `postgres://` URL.
///
/// This is the one place that parses a hub location. A leading `~/` is the home folder; a
/// relative path is taken from the current directory. Anything that starts like a URL scheme
/// (`http://`, `foo:`) and is not a known kind is refused rather than taken for a file name; a file
/// whose name contains a colon can be written `./name:with:colons`.
public func openHub(location: String) throws(HubError) -> any Hub {
  switch HubLocation(parsing: location) {
  case .empty:
    throw .invalidLocation("the hub location is empty")
  case .postgres:
    throw .invalidLocation("the PostgreSQL hub is not available yet")
  case .unknown(let scheme):
    throw .invalidLocation(
      "unknown hub kind \"\(scheme):\" in \(location); use a file path or postgres://")
  case .file(let path):
    return try SQLiteHub(path: path)
  }
}

enum HubLocation: Equatable {
  case empty
  case file(String)
  case postgres(String)
  case unknown(scheme: String)

  init(parsing location: String) {
    if location.isEmpty {
      self = .empty
      return
    }
    // RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then ":".
    if let colon = location.firstIndex(of: ":") {
      let scheme = location[..<colon]
      let isScheme =
        scheme.first.map(\.isASCIILetter) == true
        && scheme.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || "+-.".contains($0) }
      if isScheme {
        switch scheme.lowercased() {
        case "postgres", "postgresql": self = .postgres(location)
        default: self = .unknown(scheme: String(scheme))
        }
        return
      }
    }
    if location == "~" || location.hasPrefix("~/") {
      let home = FileManager.default.homeDirectoryForCurrentUser.path
      self = .file(home + location.dropFirst())
      return
    }
    self = .file(location)
  }
}

extension Character {
  fileprivate var isASCIILetter: Bool { isASCII && isLetter }
  fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
