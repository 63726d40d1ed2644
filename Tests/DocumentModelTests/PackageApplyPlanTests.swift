import DocumentModel
import Testing

/// How a package version from another device lands: a tree built aside from what this device
/// holds and what it fetches, then one swap.
@Suite("Package apply plan")
struct PackageApplyPlanTests {
  private func hash(_ text: String) -> ContentHash { ContentHash(of: Array(text.utf8)) }

  private func file(_ target: String, _ text: String, mode: UInt16 = 0o644, time: Int64 = 1)
    -> PackageEntry
  {
    .file(
      DocumentPath(target), hash: hash(text), size: UInt64(text.utf8.count), mode: mode,
      modified: time)
  }

  private func folder(_ target: String) -> PackageEntry {
    .folder(DocumentPath(target), mode: 0o755)
  }

  private var shown: PackageManifest {
    get throws {
      try PackageManifest(entries: [
        file("HEAD", "ref: refs/heads/main\n"), folder("refs"), folder("refs/heads"),
        file("refs/heads/main", "aaa\n"), folder("objects"), folder("objects/aa"),
        file("objects/aa/1", "object one"), file("objects/aa/2", "object two"),
        file("config", "[core]\n"),
        .symlink(DocumentPath("link"), target: Array("HEAD".utf8), modified: 5),
      ])
    }
  }

  private var remote: PackageManifest {
    get throws {
      try PackageManifest(entries: [
        file("HEAD", "ref: refs/heads/main\n"), folder("refs"), folder("refs/heads"),
        file("refs/heads/main", "bbb\n"), folder("objects"), folder("objects/pack"),
        // git packed both objects into one new file, and kept one loose object elsewhere.
        file("objects/pack/p.pack", "object one + object two"),
        file("objects/pack/p.idx", "index"), file("objects/pack/same", "object one"),
        file("objects/pack/twin", "index"),
        file("config", "[core]\n", time: 7),
        .symlink(DocumentPath("link"), target: Array("config".utf8), modified: 6),
      ])
    }
  }

  @Test func unchangedFilesAreSharedMovedOnesCopiedAndOnlyNewContentFetched() throws {
    let plan = PackageApplyPlan(shown: try shown, remote: try remote)
    var kinds: [String: String] = [:]
    for step in plan.staging {
      let name = step.entry.path.description
      switch step {
      case .makeFolder: kinds[name] = "folder"
      case .share: kinds[name] = "share"
      case .copy(_, let from): kinds[name] = "copy \(from)"
      case .write: kinds[name] = "write"
      case .makeSymlink: kinds[name] = "symlink"
      }
    }
    #expect(
      kinds == [
        "HEAD": "share", "refs": "folder", "refs/heads": "folder", "refs/heads/main": "write",
        "objects": "folder", "objects/pack": "folder", "objects/pack/p.pack": "write",
        "objects/pack/p.idx": "write", "objects/pack/same": "copy objects/aa/1",
        "objects/pack/twin": "write", "config": "copy config", "link": "symlink",
      ])
    // "index" is written twice but fetched once.
    #expect(
      plan.fetch.compactMap(\.fileHash)
        == [hash("bbb\n"), hash("object one + object two"), hash("index")].sorted())
    #expect(plan.fetchBytes == 4 + 23 + 5)
    #expect(plan.from == (try shown).contentHash)
    #expect(plan.to == (try remote).contentHash)
    #expect(plan.changes == (try shown).diff(to: try remote))
  }

  @Test func stagingBuildsExactlyTheRemoteVersionFoldersFirst() throws {
    let shown = try shown
    let remote = try remote
    let plan = PackageApplyPlan(shown: shown, remote: remote)
    var built: [DocumentPath: PackageEntry] = [:]
    let fetched = Set(plan.fetch.compactMap(\.fileHash))
    for step in plan.staging {
      let entry = step.entry
      if entry.path.components.count > 1 {
        #expect(built[entry.path.parent]?.content == .folder, "\(entry.path) before its folder")
      }
      #expect(built[entry.path] == nil, "\(entry.path) staged twice")
      switch step {
      case .share(let entry):
        #expect(shown.entry(at: entry.path) == entry)
      case .copy(let entry, let from):
        #expect(shown.entry(at: from)?.fileHash == entry.fileHash)
      case .write(let entry):
        #expect(fetched.contains(entry.fileHash!))
      case .makeFolder, .makeSymlink:
        break
      }
      built[entry.path] = entry
    }
    #expect(try PackageManifest(entries: Array(built.values)) == remote)
  }

  @Test func theFirstVersionIsAllFetchedAndTheSameVersionIsAllShared() throws {
    let remote = try remote
    let first = PackageApplyPlan(shown: .empty, remote: remote)
    #expect(
      first.staging.allSatisfy {
        if case .share = $0 { return false }
        if case .copy = $0 { return false }
        return true
      })
    #expect(first.fetch.count == Set(remote.fileHashes).count)
    let again = PackageApplyPlan(shown: remote, remote: remote)
    #expect(again.fetch.isEmpty)
    #expect(again.changes.isEmpty)
    #expect(again.from == again.to)
    #expect(
      again.staging.allSatisfy {
        if case .write = $0 { return false }
        if case .copy = $0 { return false }
        return true
      })
  }

  @Test(arguments: 0..<40) func randomVersionsLandExactlyAndFetchOnlyWhatIsNew(seed: Int) throws {
    var random = SplitMix64(state: UInt64(seed))
    let shown = try Self.randomManifest(&random)
    let remote = try Self.randomManifest(&random)
    let plan = PackageApplyPlan(shown: shown, remote: remote)
    var built: [PackageEntry] = []
    for step in plan.staging {
      switch step {
      case .share(let entry): #expect(shown.entry(at: entry.path) == entry)
      case .copy(let entry, let from): #expect(shown.entry(at: from)?.fileHash == entry.fileHash)
      default: break
      }
      built.append(step.entry)
    }
    #expect(try PackageManifest(entries: built) == remote)
    let needed = remote.fileHashes.subtracting(shown.fileHashes)
    #expect(Set(plan.fetch.compactMap(\.fileHash)) == needed)
    #expect(plan.fetch.count == needed.count)
    #expect(Set(plan.changes.newContent) == needed)
  }

  /// Up to 30 entries over a few folders and eight contents, so that two manifests share some.
  private static func randomManifest(_ random: inout SplitMix64) throws -> PackageManifest {
    var entries: [DocumentPath: PackageEntry] = [:]
    for folder in ["d", "d/e", "f"] where random.chance(70) {
      if folder == "d/e" && entries[DocumentPath("d")] == nil { continue }
      entries[DocumentPath(folder)] = .folder(DocumentPath(folder), mode: 0o755)
    }
    let folders = entries.keys.map(\.description) + [""]
    for _ in 0..<random.below(30) {
      let folder = random.pick(folders)
      let name = "n\(random.below(6))"
      let target = DocumentPath(folder.isEmpty ? name : folder + "/" + name)
      guard entries[target] == nil else { continue }
      if random.chance(10) {
        entries[target] = .symlink(target, target: Array("t\(random.below(3))".utf8), modified: 1)
      } else {
        let text = "content \(random.below(8))"
        entries[target] = .file(
          target, hash: ContentHash(of: Array(text.utf8)), size: UInt64(text.utf8.count),
          mode: random.chance(20) ? 0o755 : 0o644, modified: Int64(random.below(3)))
      }
    }
    return try PackageManifest(entries: Array(entries.values))
  }
}
