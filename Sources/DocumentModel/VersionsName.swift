/// The names of conflict versions under `.versions/<path>/`.
///
/// `<UTC time>_<sanitised device name>_<first 6 hex of the id><extension>`. The name depends on
/// the version alone, so every device lists the same names for the whole life of a conflict.
public enum VersionsName {
  /// The name of `record` in its document's `.versions` folder, as raw bytes.
  public static func name(for record: VersionRecord) -> [UInt8] {
    name(
      modified: record.modified, deviceName: record.deviceName, id: record.id,
      documentName: record.path.name)
  }

  /// The name of a version of the document named `documentName` made at `modified` by the
  /// device `deviceName`, whose id is `id`: what ``name(for:)`` gives a record.
  ///
  /// A package's conflict version uses it too: it is a folder, `.versions/<path>/<name>/`,
  /// with the package's extension last (`2026-11-20T14.03.12Z_laptop_3f2a9c.scriv`) so that its
  /// program still opens it; a `.git` package's versions have none (`.git` is a dot name), and
  /// `git fetch .versions/repo/.git/<name>` reads one as a repository.
  public static func name(
    modified: HLCTimestamp, deviceName: String, id: VersionID, documentName: [UInt8]
  ) -> [UInt8] {
    let prefix =
      "\(modified.versionsTimeString)_\(sanitise(deviceName: deviceName))_\(id.shortHex)"
    return Array(prefix.utf8) + fileExtension(of: documentName)
  }

  /// `name(for:)` as a String (lossy for names that are not UTF-8).
  public static func string(for record: VersionRecord) -> String {
    String(decoding: name(for: record), as: UTF8.self)
  }

  /// Keeps `[A-Za-z0-9.-]`, turns every other character into `-`, and names an empty name
  /// `device`.
  public static func sanitise(deviceName: String) -> String {
    let kept = deviceName.unicodeScalars.map { scalar -> Character in
      switch scalar {
      case "A"..."Z", "a"..."z", "0"..."9", ".", "-": Character(scalar)
      default: "-"
      }
    }
    return kept.isEmpty ? "device" : String(kept)
  }

  /// The extension of a document name, dot included, so that viewers recognise a version's type.
  ///
  /// The last extension (`.md`); none for `Makefile`, for a dot file such as `.bashrc`, or for a
  /// name ending in a dot. Compressed tarballs keep both parts (`archive.tar.gz` → `.tar.gz`)
  /// because `.tar.gz` is how people and `tar` recognise the type.
  public static func fileExtension(of name: [UInt8]) -> [UInt8] {
    let dot = UInt8(ascii: ".")
    guard let last = name.lastIndex(of: dot), last > 0, last < name.count - 1 else { return [] }
    let stem = name[..<last]
    if let previous = stem.lastIndex(of: dot), previous > 0,
      Array(stem[(previous + 1)...]) == Array("tar".utf8)
    {
      return Array(name[previous...])
    }
    return Array(name[last...])
  }
}
