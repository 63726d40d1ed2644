import DocumentModel
import Testing

/// Which folders are packages: the built-in list, `package` and `-package` lines of
/// `.docsyncattributes`, and the outermost package holding a path.
@Suite("Package rules")
struct PackageRulesTests {
  private func rules(_ text: String) -> PackageRules {
    PackageRules(fileContent: Array(text.utf8))
  }

  private func root(_ rules: PackageRules, _ target: String, folder: Bool = false) -> String? {
    rules.packageRoot(of: DocumentPath(target), isFolder: folder)?.description
  }

  @Test func gitFoldersAndBundlesArePackagesByThemselves() {
    let builtIn = PackageRules.builtIn
    for folder in [
      ".git", "code/repo/.git", "Novel.scriv", "a/b/Notes.rtfd", "Report.pages", "Talk.key",
      "Budget.numbers", "Song.logicx", "Jam.band", "old/.hg", "old/.svn",
    ] {
      #expect(builtIn.isPackage(folder: DocumentPath(folder)), "\(folder)")
    }
    for folder in ["repo", "git", ".github", "Novel.scriv.bak", "notes.md", "scriv", ".gitx"] {
      #expect(!builtIn.isPackage(folder: DocumentPath(folder)), "\(folder)")
    }
    #expect(builtIn.lineCount == 0)
  }

  @Test func theWorkingTreeBesideGitStaysOrdinaryDocuments() {
    let builtIn = PackageRules.builtIn
    #expect(root(builtIn, "repo/README.md") == nil)
    #expect(root(builtIn, "repo/src", folder: true) == nil)
    #expect(root(builtIn, "repo/.gitignore") == nil)
    #expect(root(builtIn, "repo/.git", folder: true) == "repo/.git")
    #expect(root(builtIn, "repo/.git/HEAD") == "repo/.git")
    #expect(root(builtIn, "repo/.git/objects/ab/cdef", folder: false) == "repo/.git")
    #expect(root(builtIn, "repo/.git/refs/heads", folder: true) == "repo/.git")
    #expect(builtIn.isInsidePackage(DocumentPath("repo/.git/HEAD")))
    #expect(!builtIn.isInsidePackage(DocumentPath("repo/.git")))
    #expect(!builtIn.isInsidePackage(DocumentPath("repo/README.md")))
  }

  @Test func aFileIsNeverAPackageWhateverItsName() {
    let builtIn = PackageRules.builtIn
    // A worktree's or submodule's `.git` is a file naming the real repository.
    #expect(root(builtIn, "worktree/.git", folder: false) == nil)
    #expect(root(builtIn, "certs/server.key", folder: false) == nil)
    #expect(root(builtIn, "certs/server.key", folder: true) == "certs/server.key")
  }

  @Test func theOutermostPackageHoldsNestedOnes() {
    let builtIn = PackageRules.builtIn
    #expect(root(builtIn, "Novel.scriv/research/.git/HEAD") == "Novel.scriv")
    #expect(root(builtIn, "Novel.scriv/research/.git", folder: true) == "Novel.scriv")
    #expect(root(builtIn, "Song.logicx/Alternatives/Talk.key/Data/x") == "Song.logicx")
    // A repository's own `.git` holding a folder named like a bundle: still the repository.
    #expect(root(builtIn, "repo/.git/objects/pack.key/y") == "repo/.git")
    // Asked of the inner folder alone, the rules still say it would be one.
    #expect(builtIn.isPackage(folder: DocumentPath("Novel.scriv/research/.git")))
  }

  @Test func packageLinesAddFoldersAndMinusPackageTurnsABuiltInOff() {
    let text = """
      # mine
      *.sketch package
      Calibre?Library package
      vendor/**/.git -package
      *.key -package
      Music/Sessions/* package
      *.md merge=text

      """
    let library = rules(text)
    #expect(library.lineCount == 5)
    #expect(library.isPackage(folder: DocumentPath("design/Logo.sketch")))
    #expect(library.isPackage(folder: DocumentPath("Calibre Library")))
    #expect(library.isPackage(folder: DocumentPath("Music/Sessions/First Song")))
    #expect(!library.isPackage(folder: DocumentPath("Music/Sessions")))
    #expect(!library.isPackage(folder: DocumentPath("vendor/lib/.git")))
    #expect(library.isPackage(folder: DocumentPath("mine/.git")))
    #expect(!library.isPackage(folder: DocumentPath("Talk.key")))
    #expect(library.isPackage(folder: DocumentPath("Novel.scriv")))
    #expect(root(library, "vendor/lib/.git/HEAD") == nil)
    #expect(root(library, "Calibre Library/Author/Book (1)/cover.jpg") == "Calibre Library")
  }

  @Test func theLastLineAboutPackageWinsAndBangPackageReturnsToTheBuiltIn() {
    let text = """
      *.scriv -package
      Shared.scriv package
      *.pages -package
      Keep.pages !package
      notes package=yes
      drafts/** package -package

      """
    let library = rules(text)
    #expect(!library.isPackage(folder: DocumentPath("Novel.scriv")))
    #expect(library.isPackage(folder: DocumentPath("Shared.scriv")))
    #expect(!library.isPackage(folder: DocumentPath("Other.pages")))
    // `!package` clears what the file said before: back to the built-in answer.
    #expect(library.isPackage(folder: DocumentPath("Keep.pages")))
    // A value says nothing.
    #expect(!library.isPackage(folder: DocumentPath("notes")))
    // Within a line the later field wins.
    #expect(!library.isPackage(folder: DocumentPath("drafts/x.scriv")))
    #expect(!library.isPackage(folder: DocumentPath("drafts/x")))
    #expect(library.lineCount == 5)
  }

  @Test func packageAndMergeLinesShareOneParser() {
    let text = "*.scriv -package merge=text\n*.db package -merge\n"
    let packages = rules(text)
    let merges = MergeAttributes(fileContent: Array(text.utf8))
    #expect(!packages.isPackage(folder: DocumentPath("Novel.scriv")))
    #expect(packages.isPackage(folder: DocumentPath("Zotero.db")))
    #expect(merges.policy(for: DocumentPath("a.scriv")) == .text)
    #expect(merges.policy(for: DocumentPath("z.db")) == .manual)
    #expect(packages.lineCount == 2)
    #expect(merges.lineCount == 2)
  }

  @Test func nothingInVersionsOrHistoryIsAPackageAndTheRootIsNone() {
    let builtIn = PackageRules.builtIn
    #expect(root(builtIn, ".versions/repo/.git/v/HEAD") == nil)
    #expect(root(builtIn, ".history/Novel.scriv/v", folder: true) == nil)
    #expect(root(builtIn, "", folder: true) == nil)
    #expect(root(builtIn, "Novel.scriv", folder: false) == nil)
  }

  @Test func aVersionsPathOfAPackageNamesThePackageTheVersionAndThePathInside() throws {
    let builtIn = PackageRules.builtIn
    let inGit = try #require(
      PackageVersionPath(
        mountPath: DocumentPath(
          ".versions/repo/.git/2026-11-20T14.03.12Z_laptop_3f2a9c/refs/heads"),
        rules: builtIn))
    #expect(inGit.package == DocumentPath("repo/.git"))
    #expect(inGit.versionName == Array("2026-11-20T14.03.12Z_laptop_3f2a9c".utf8))
    #expect(inGit.inner == DocumentPath("refs/heads"))
    #expect(
      inGit.mountPath
        == DocumentPath(".versions/repo/.git/2026-11-20T14.03.12Z_laptop_3f2a9c/refs/heads"))
    // The version's own `.scriv` does not make it a package inside the package.
    let scriv = try #require(
      PackageVersionPath(
        mountPath: DocumentPath(".versions/Novel.scriv/2026-11-20T14.03.12Z_laptop_3f2a9c.scriv"),
        rules: builtIn))
    #expect(scriv.package == DocumentPath("Novel.scriv"))
    #expect(scriv.inner.isRoot)
    #expect(
      PackageVersionPath(mountPath: DocumentPath(".versions/repo/.git"), rules: builtIn) == nil)
    #expect(
      PackageVersionPath(mountPath: DocumentPath(".versions/notes/plan.md/v.md"), rules: builtIn)
        == nil)
    #expect(PackageVersionPath(mountPath: DocumentPath("repo/.git/HEAD"), rules: builtIn) == nil)
  }

  @Test func movingAVersionOntoOrIntoItsPackageChoosesIt() {
    let builtIn = PackageRules.builtIn
    let version = DocumentPath(".versions/Novel.scriv/2026-11-20T14.03.12Z_laptop_3f2a9c.scriv")
    let onto = PackageVersionPath.chosen(
      renaming: version, to: DocumentPath("Novel.scriv"), rules: builtIn)
    let into = PackageVersionPath.chosen(
      renaming: version,
      to: DocumentPath("Novel.scriv/2026-11-20T14.03.12Z_laptop_3f2a9c.scriv"), rules: builtIn)
    #expect(onto?.package == DocumentPath("Novel.scriv"))
    #expect(into == onto)
    #expect(
      PackageVersionPath.chosen(renaming: version, to: DocumentPath("Copy.scriv"), rules: builtIn)
        == nil)
    #expect(
      PackageVersionPath.chosen(
        renaming: version.appending("Files"), to: DocumentPath("Novel.scriv"), rules: builtIn)
        == nil)
  }

  @Test func aChangeOfTheRulesSaysWhichFoldersConvert() {
    let folders = [
      "Novel.scriv", "Novel.scriv/research", "Novel.scriv/research/.git", "repo", "repo/.git",
      "vendor/lib/.git", "Calibre Library", "Calibre Library/Author",
    ].map(DocumentPath.init)
    let before = PackageRules.builtIn
    let after = rules("vendor/**/.git -package\nCalibre?Library package\n*.scriv -package\n")
    let (become, stop) = before.conversions(to: after, among: folders)
    #expect(become.map(\.description) == ["Calibre Library", "Novel.scriv/research/.git"])
    #expect(stop.map(\.description) == ["Novel.scriv", "vendor/lib/.git"])
    let back = after.conversions(to: before, among: folders)
    #expect(back.becomePackages == stop)
    #expect(back.stopBeingPackages == become)
    #expect(before.conversions(to: before, among: folders) == ([], []))
  }
}
