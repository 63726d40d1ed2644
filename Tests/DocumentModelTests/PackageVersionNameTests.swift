import DocumentModel
import Testing

/// The name of a package's conflict version: the one `.versions` name of any version, the
/// package's extension last.
@Suite("Package version names")
struct PackageVersionNameTests {
  private let time = HLCTimestamp(wallMilliseconds: 1_763_647_392_000)

  @Test func aPackageVersionIsNamedAsAnyVersionWithTheExtensionLast() {
    var author = device(3, "lap top")
    var set = VersionSet()
    let record = make(&author, &set, "Books/Novel.scriv", .directory, now: 1_763_647_392_000)
    let name = VersionsName.string(for: record)
    #expect(name == "2025-11-20T14.03.12Z_lap-top_\(record.id.shortHex).scriv")
    let pieces = VersionsName.name(
      modified: record.modified, deviceName: record.deviceName, id: record.id,
      documentName: Array("Novel.scriv".utf8))
    #expect(pieces == VersionsName.name(for: record))
  }

  @Test func aGitPackageVersionHasNoExtensionAndBundlesKeepTheirs() {
    let id = VersionID(Digest256(bytes: [UInt8](repeating: 0x3f, count: 32))!)
    func name(_ document: String) -> String {
      String(
        decoding: VersionsName.name(
          modified: time, deviceName: "laptop", id: id, documentName: Array(document.utf8)),
        as: UTF8.self)
    }
    #expect(name(".git") == "2025-11-20T14.03.12Z_laptop_3f3f3f")
    #expect(name("Talk.key") == "2025-11-20T14.03.12Z_laptop_3f3f3f.key")
    #expect(name("Notes.v2.rtfd") == "2025-11-20T14.03.12Z_laptop_3f3f3f.rtfd")
    #expect(name("Calibre Library") == "2025-11-20T14.03.12Z_laptop_3f3f3f")
    let version = PackageVersionPath(
      package: DocumentPath("repo/.git"), versionName: Array(name(".git").utf8))
    #expect(
      version.mountPath.description == ".versions/repo/.git/2025-11-20T14.03.12Z_laptop_3f3f3f")
  }
}
