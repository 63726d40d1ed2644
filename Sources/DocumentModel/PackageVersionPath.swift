/// A place inside a package's conflict version: `.versions/<package>/<version name>/<inner>`,
/// where the version is a whole read-only folder holding the package as that version has it.
///
/// Told from a document's versions by the package rules: the outermost folder on the way that
/// is a package is the package, the next name the version (whose own extension, `.scriv`, does
/// not make it a package of its own), the rest a path inside it.
public struct PackageVersionPath: Hashable, Sendable {
  /// The package's path in the library.
  public let package: DocumentPath
  /// The version's name (``VersionsName``).
  public let versionName: [UInt8]
  /// The path inside the version; the root for the version's folder itself.
  public let inner: DocumentPath

  public init(package: DocumentPath, versionName: [UInt8], inner: DocumentPath = .root) {
    self.package = package
    self.versionName = versionName
    self.inner = inner
  }

  /// Reads a path of the mount that lies in a package's version (the version's folder or
  /// anything in it); nil for any other path, `.versions/<package>` itself included.
  public init?(mountPath: DocumentPath, rules: PackageRules) {
    guard mountPath.components.first == IgnoredNames.versionsFolder else { return nil }
    let rest = DocumentPath(components: Array(mountPath.components.dropFirst()))
    guard let package = rules.packageRoot(of: rest, isFolder: true),
      rest.components.count > package.components.count
    else { return nil }
    self.package = package
    versionName = rest.components[package.components.count]
    inner = DocumentPath(components: Array(rest.components.dropFirst(package.components.count + 1)))
  }

  /// Where it shows in the mount.
  public var mountPath: DocumentPath {
    DocumentPath(
      components: [IgnoredNames.versionsFolder] + package.components + [versionName]
        + inner.components)
  }

  /// The version that a rename from `from` to `to` chooses, when it is one: a version's folder
  /// moved onto its package (`mv -T .versions/<p>/<v> <p>`) or into it under its own name,
  /// which is what `mv .versions/<p>/<v> <p>` asks of the file system when `<p>` is a folder.
  /// Moving a version into the package it is a version of means nothing else, so both choose
  /// it: the package becomes that version on every device.
  public static func chosen(renaming from: DocumentPath, to: DocumentPath, rules: PackageRules)
    -> PackageVersionPath?
  {
    guard let version = PackageVersionPath(mountPath: from, rules: rules), version.inner.isRoot,
      to == version.package || to == version.package.appending(version.versionName)
    else { return nil }
    return version
  }
}
