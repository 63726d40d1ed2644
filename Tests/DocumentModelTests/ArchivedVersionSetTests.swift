import DocumentModel
import Testing

/// A set that keeps only heads in memory (the rest in its archive) decides as one that keeps
/// every record: same heads, same library state, same `.history`, same merge bases, whatever
/// the order and batches in which records arrive.
@Suite struct ArchivedVersionSetTests {
  @Test(arguments: 0..<25) func decidesAsASetThatKeepsEverything(seed: Int) {
    var random = SplitMix(seed: UInt64(seed))
    let records = Self.history(&random)
    var delivery = records
    delivery.shuffle(using: &random)
    delivery += delivery.prefix(5)  // some arrive twice

    var full = VersionSet()
    var fullState = LibraryState(VersionSet())
    var fullHistory = HistoryIndex()
    let archive = MemoryArchive()
    var archived = VersionSet(heads: [], archive: archive)
    var archivedState = LibraryState(VersionSet())
    var archivedHistory = HistoryIndex(pathsWithEarlierVersions: [])
    var index = 0
    while index < delivery.count {
      let batch = Array(
        delivery[index..<min(delivery.count, index + Int.random(in: 1...7, using: &random))])
      index += batch.count
      let touched = full.insert(contentsOf: batch)
      fullState.update(from: full, touched: touched)
      fullHistory.update(from: full, touched: touched)
      archive.store(batch)
      let archivedTouched = archived.insert(contentsOf: batch)
      archivedState.update(from: archived, touched: archivedTouched)
      archivedHistory.update(from: archived, touched: archivedTouched)
    }

    let paths = Set(records.map(\.path))
    var heads = 0
    for path in paths {
      #expect(archived.heads(at: path) == full.heads(at: path))
      #expect(archived.ids(at: path).sorted() == full.ids(at: path).sorted())
      heads += full.heads(at: path).count
      #expect(
        Set(archivedHistory.earlierVersions(at: path, in: archived).map(\.id))
          == Set(fullHistory.earlierVersions(at: path, in: full).map(\.id)))
    }
    #expect(archived.count == heads, "only heads are in memory")
    #expect(archivedState == fullState)
    #expect(archivedState == LibraryState(full))
    #expect(archivedHistory.paths == fullHistory.paths)
    #expect(archivedHistory.folders(in: .root) == fullHistory.folders(in: .root))
    #expect(archived.mergeBases(in: archivedState) == full.mergeBases(in: fullState))
    for record in records {
      #expect(archived[record.id] == record)
      #expect(Set(archived.followers(of: record.id)) == Set(full.followers(of: record.id)))
    }
    // The index a restart builds from the archive's paths equals the one kept up to date.
    let restarted = VersionSet(
      heads: paths.flatMap { full.heads(at: $0) }, archive: archive)
    #expect(LibraryState(restarted) == fullState)
    #expect(HistoryIndex(pathsWithEarlierVersions: fullHistory.paths) == archivedHistory)

    // Releasing takes versions out of `.history` in both.
    let released = fullHistory.paths.flatMap { fullHistory.earlierVersions(at: $0, in: full) }
      .map(\.id).prefix(4)
    fullHistory.release(released, in: full)
    archive.released.formUnion(released)
    archivedHistory.release(released, in: archived)
    #expect(archivedHistory.paths == fullHistory.paths)
    for path in paths {
      #expect(
        Set(archivedHistory.earlierVersions(at: path, in: archived).map(\.id))
          == Set(fullHistory.earlierVersions(at: path, in: full).map(\.id)))
    }
  }

  /// Three devices editing, deleting and resolving four documents, each version following one
  /// or two known versions of its path.
  static func history(_ random: inout SplitMix) -> [VersionRecord] {
    var authors = (1...3).map { device(UInt64($0)) }
    var set = VersionSet()
    var records: [VersionRecord] = []
    let names = ["a.md", "notes/b.md", "notes/deep/c.txt", "d"]
    for step in 0..<60 {
      let name = names[Int.random(in: 0..<names.count, using: &random)]
      let known = set.ids(at: path(name))
      var parents: [VersionID] = []
      if !known.isEmpty && Int.random(in: 0..<5, using: &random) > 0 {
        parents.append(known[Int.random(in: 0..<known.count, using: &random)])
        if Bool.random(using: &random) {
          parents.append(known[Int.random(in: 0..<known.count, using: &random)])
        }
      }
      let content: VersionContent =
        Int.random(in: 0..<6, using: &random) == 0 ? .deletion : fileContent("\(step % 7)")
      let author = Int.random(in: 0..<authors.count, using: &random)
      let record = authors[author].record(
        [PendingChange(path: path(name), content: content, parents: Array(Set(parents)))],
        known: set, now: UInt64(1_000_000 + step))[0]
      set.insert(record)
      records.append(record)
    }
    return records
  }
}

/// A small seeded generator, so that a failing seed fails again.
struct SplitMix: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
