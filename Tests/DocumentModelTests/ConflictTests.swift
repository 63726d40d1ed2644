import DocumentModel
import Testing

@Suite struct ConflictTests {
  @Test func oneHeadMeansNoConflict() {
    var set = VersionSet()
    var a = device(1)
    let v1 = make(&a, &set, "f.txt", fileContent("1"))
    let v2 = make(&a, &set, "f.txt", fileContent("2"), parents: [v1])
    let library = LibraryState(set)
    #expect(set.heads(at: path("f.txt")) == [v2])
    #expect(library.entries[path("f.txt")] == .document(v2))
    #expect(library.conflicts.isEmpty)
  }

  @Test func laterModificationTimeWins() {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    let base = make(&a, &set, "f.txt", fileContent("base"), now: 1_000)
    let fromB = make(&b, &set, "f.txt", fileContent("b"), parents: [base], now: 5_000)
    let fromA = make(&a, &set, "f.txt", fileContent("a"), parents: [base], now: 9_000)
    let library = LibraryState(set)
    #expect(library.current(at: path("f.txt")) == fromA)
    #expect(library.conflicts[path("f.txt")] == [fromB])
  }

  @Test func tiesOnModificationTimeGoToGreaterDeviceThenGreaterID() {
    let time = HLCTimestamp(wallMilliseconds: 42, counter: 0)
    func record(_ text: String, device: UInt64) -> VersionRecord {
      VersionRecord(
        path: path("f"), content: fileContent(text), parents: [], modified: time,
        deviceID: DeviceID(high: 0, low: device), deviceName: "d\(device)")
    }
    let low = record("x", device: 1)
    let high = record("y", device: 2)
    #expect(LibraryState(VersionSet([low, high])).current(at: path("f")) == high)
    #expect(LibraryState(VersionSet([high, low])).current(at: path("f")) == high)
    let same1 = record("p", device: 3)
    let same2 = record("q", device: 3)
    let expected = max(same1.id, same2.id)
    #expect(LibraryState(VersionSet([same1, same2])).current(at: path("f"))?.id == expected)
    #expect(LibraryState(VersionSet([same2, same1])).current(at: path("f"))?.id == expected)
  }

  @Test func contentBeatsALaterDeletion() {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    let base = make(&a, &set, "f.txt", fileContent("base"), now: 1_000)
    let edit = make(&a, &set, "f.txt", fileContent("edited"), parents: [base], now: 2_000)
    let deletion = make(&b, &set, "f.txt", .deletion, parents: [base], now: 90_000)
    #expect(deletion.modified > edit.modified)
    let library = LibraryState(set)
    #expect(library.current(at: path("f.txt")) == edit)
    #expect(library.conflicts.isEmpty)
    #expect(set.heads(at: path("f.txt")).count == 2)
  }

  @Test func threeConcurrentVersionsAllVisibleAndResolvable() throws {
    var set = VersionSet()
    var devices = [device(1, "laptop"), device(2, "desk top"), device(3, "")]
    let base = make(&devices[0], &set, "notes/plan.md", fileContent("base"), now: 1_000)
    var versions: [VersionRecord] = []
    for index in devices.indices {
      versions.append(
        make(
          &devices[index], &set, "notes/plan.md", fileContent("v\(index)"), parents: [base],
          now: 2_000 + UInt64(index) * 1_000))
    }
    var library = LibraryState(set)
    #expect(library.current(at: path("notes/plan.md")) == versions[2])
    #expect(Set(library.conflicts[path("notes/plan.md")] ?? []) == Set([versions[0], versions[1]]))
    let names = library.versionsListing[path("notes/plan.md")] ?? []
    #expect(names.count == 2)
    #expect(names.allSatisfy { String(decoding: $0, as: UTF8.self).hasSuffix(".md") })

    // discard one: two versions remain in play
    let discard = Resolution.discard(versions[0].id).changes(in: set, state: library)
    #expect(
      discard.count == 1
        && discard[0].parents.sorted() == [versions[0].id, versions[2].id].sorted())
    let discardRecords = devices[0].record(discard, known: set, now: 10_000)
    let touched = set.insert(contentsOf: discardRecords)
    library.update(from: set, touched: touched)
    #expect(library.conflicts[path("notes/plan.md")] == [versions[1]])
    #expect(library.current(at: path("notes/plan.md"))?.content == versions[2].content)

    // choose the loser: its content becomes current, all heads are parents
    let choose = Resolution.choose(versions[1].id).changes(in: set, state: library)
    #expect(
      choose.count == 1 && choose[0].content == versions[1].content && choose[0].parents.count == 2)
    let chosen = devices[1].record(choose, known: set, now: 11_000)
    let touched2 = set.insert(contentsOf: chosen)
    library.update(from: set, touched: touched2)
    #expect(library.conflicts.isEmpty)
    #expect(library.current(at: path("notes/plan.md"))?.content == fileContent("v1"))
    #expect(library == LibraryState(set))
    #expect(Resolution.choose(chosen[0].id).changes(in: set, state: library).isEmpty)
  }

  @Test func keepCurrentForADocumentAndForAFolder() {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    for name in ["d/x.txt", "d/e/y.txt", "z.txt"] {
      let base = make(&a, &set, name, fileContent("base"), now: 1_000)
      make(&a, &set, name, fileContent("a"), parents: [base], now: 2_000)
      make(&b, &set, name, fileContent("b"), parents: [base], now: 3_000)
    }
    var library = LibraryState(set)
    #expect(library.conflicts.count == 3)
    let one = Resolution.keepCurrent(path("z.txt")).changes(in: set, state: library)
    #expect(one.count == 1 && one[0].content == fileContent("b") && one[0].parents.count == 2)
    let folder = Resolution.keepCurrentUnder(path("d")).changes(in: set, state: library)
    #expect(folder.map(\.path) == [path("d/e/y.txt"), path("d/x.txt")])
    let touched = set.insert(contentsOf: a.record(folder, known: set, now: 4_000))
    library.update(from: set, touched: touched)
    #expect(Array(library.conflicts.keys) == [path("z.txt")])
    #expect(library.current(at: path("d/x.txt"))?.content == fileContent("b"))
    let all = Resolution.keepCurrentUnder(.root).changes(in: set, state: library)
    let touched2 = set.insert(contentsOf: a.record(all, known: set, now: 5_000))
    library.update(from: set, touched: touched2)
    #expect(library.conflicts.isEmpty)
    #expect(library == LibraryState(set))
  }

  @Test func editWhileInConflictKeepsTheConflictVersion() {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    let base = make(&a, &set, "f", fileContent("base"), now: 1_000)
    let fromA = make(&a, &set, "f", fileContent("a"), parents: [base], now: 2_000)
    let fromB = make(&b, &set, "f", fileContent("b"), parents: [base], now: 3_000)
    let merged = make(&a, &set, "f", fileContent("merge"), parents: [fromB], now: 2_500)
    let library = LibraryState(set)
    #expect(library.current(at: path("f")) == merged)
    #expect(library.conflicts[path("f")] == [fromA])
  }

  @Test func outOfOrderAndDuplicateDeliveryGiveTheSameHeads() {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    let v1 = make(&a, &set, "f", fileContent("1"))
    let v2 = make(&a, &set, "f", fileContent("2"), parents: [v1])
    let w = make(&b, &set, "f", fileContent("w"), parents: [v1])
    let v3 = make(&a, &set, "f", fileContent("3"), parents: [v2])
    let reversed = VersionSet([v3, w, v3, v2, v1, w])
    #expect(Set(reversed.heads(at: path("f"))) == Set([v3, w]))
    #expect(LibraryState(reversed) == LibraryState(set))
    #expect(reversed.isAncestor(v1.id, of: v3.id))
    #expect(!reversed.isAncestor(w.id, of: v3.id))
  }
}

@Suite struct DirectoryTests {
  @Test func folderDeletedWhileAFileIsAddedInsideComesBack() {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    let folder = make(&a, &set, "d", .directory, now: 1_000)
    let deleted = make(&a, &set, "d", .deletion, parents: [folder], now: 5_000)
    let file = make(&b, &set, "d/new.txt", fileContent("new"), now: 2_000)
    let library = LibraryState(set)
    #expect(set.heads(at: path("d")) == [deleted])
    #expect(library.entries[path("d")] == .directory(nil))
    #expect(library.current(at: path("d/new.txt")) == file)
    #expect(library.conflicts.isEmpty)
    // and when the file goes too, so does the folder
    var later = set
    let gone = make(&b, &later, "d/new.txt", .deletion, parents: [file], now: 6_000)
    var incremental = library
    incremental.update(from: later, touched: [gone.path])
    #expect(incremental.entries[path("d")] == nil)
    #expect(incremental == LibraryState(later))
  }

  @Test func folderDeletedWhileAFileInsideIsEditedKeepsTheEdit() {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    let folder = make(&a, &set, "d", .directory, now: 1_000)
    let file = make(&a, &set, "d/f", fileContent("1"), now: 1_100)
    make(&a, &set, "d/f", .deletion, parents: [file], now: 5_000)
    make(&a, &set, "d", .deletion, parents: [folder], now: 5_001)
    let edit = make(&b, &set, "d/f", fileContent("2"), parents: [file], now: 2_000)
    let library = LibraryState(set)
    #expect(library.current(at: path("d/f")) == edit)
    #expect(library.entries[path("d")] == .directory(nil))
  }

  @Test func fileAndFolderAtOnePathKeepBoth() {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    let file = make(&a, &set, "x", fileContent("file"), now: 9_000)  // later: would win alone
    let folder = make(&b, &set, "x", .directory, now: 1_000)
    let inside = make(&b, &set, "x/inside", fileContent("in"), now: 1_001)
    let library = LibraryState(set)
    #expect(library.entries[path("x")] == .directory(folder))
    #expect(library.conflicts[path("x")] == [file])
    #expect(library.current(at: path("x/inside")) == inside)
    #expect(library.versionsListing[path("x")]?.count == 1)
    // keep current: the folder stays, the file is resolved away
    let keep = Resolution.keepCurrent(path("x")).changes(in: set, state: library)
    #expect(keep.count == 1 && keep[0].content == .directory && keep[0].parents.count == 2)
  }

  @Test func fileWinningOverADeletedFolderWithLiveContentIsShownAsAConflict() {
    var set = VersionSet()
    var a = device(1)
    var b = device(2)
    let folder = make(&a, &set, "x", .directory, now: 1_000)
    make(&b, &set, "x/kept", fileContent("k"), now: 1_500)
    let gone = make(&a, &set, "x", .deletion, parents: [folder], now: 2_000)
    let file = make(&a, &set, "x", fileContent("file"), parents: [gone], now: 3_000)
    let library = LibraryState(set)
    #expect(library.entries[path("x")] == .directory(nil))
    #expect(library.conflicts[path("x")] == [file])
  }

  @Test func incrementalUpdateMatchesFullComputation() {
    var set = VersionSet()
    var a = device(1)
    var library = LibraryState(set)
    var previous: [DocumentPath: VersionRecord] = [:]
    for step in 0..<200 {
      let target = ["a", "a/b", "a/b/c", "d/e", "a/x"][step % 5]
      let content: VersionContent =
        step % 7 == 0 ? .deletion : (step % 3 == 0 ? .directory : fileContent("\(step)"))
      let parents = previous[path(target)].map { [$0] } ?? []
      let record = make(&a, &set, target, content, parents: parents, now: UInt64(step))
      previous[path(target)] = record
      library.update(from: set, touched: [record.path])
      #expect(library == LibraryState(set))
    }
  }
}

@Suite struct NamingTests {
  @Test func versionsNameHasTimeDeviceShortIDAndExtensionLast() {
    let record = VersionRecord(
      path: path("notes/plan.md"), content: fileContent("x"), parents: [],
      modified: HLCTimestamp(wallMilliseconds: 1_795_183_392_000),
      deviceID: DeviceID(high: 0, low: 1),
      deviceName: "laptop")
    #expect(
      VersionsName.string(for: record) == "2026-11-20T14.03.12Z_laptop_\(record.id.shortHex).md")
  }

  @Test func deviceNamesAreSanitised() {
    #expect(VersionsName.sanitise(deviceName: "Anna's MacBook Pro") == "Anna-s-MacBook-Pro")
    #expect(VersionsName.sanitise(deviceName: "host.local-1") == "host.local-1")
    #expect(VersionsName.sanitise(deviceName: "") == "device")
    #expect(VersionsName.sanitise(deviceName: "a/b_c\u{E9}") == "a-b-c-")
  }

  @Test func extensions() {
    func ext(_ name: String) -> String {
      String(decoding: VersionsName.fileExtension(of: Array(name.utf8)), as: UTF8.self)
    }
    #expect(ext("plan.md") == ".md")
    #expect(ext("Makefile") == "")
    #expect(ext(".bashrc") == "")
    #expect(ext("trailing.") == "")
    #expect(ext("archive.tar.gz") == ".tar.gz")
    #expect(ext("photo.final.jpeg") == ".jpeg")
    #expect(ext(".config.json") == ".json")
  }

  @Test func ignoredNames() {
    let ignored = [
      "4913", ".plan.md.swp", ".plan.md.swo", "plan.md~", "#plan.md#", ".#plan.md",
      ".goutputstream-ABC123", ".~lock.report.odt#", "plan.md.vsctmp", ".fuse_hidden0001",
      "~$report.docx", "video.mp4.part",
    ]
    for name in ignored { #expect(IgnoredNames.isIgnored(name: Array(name.utf8)), "\(name)") }
    let kept = [
      "plan.md", "4914", "sedAbC123", "lu123.tmp", "#notes", ".sw", "a.swp", ".versionsx",
      "part", "party.md", "a~b",
    ]
    for name in kept { #expect(!IgnoredNames.isIgnored(name: Array(name.utf8)), "\(name)") }
    #expect(IgnoredNames.isIgnored(path(".versions/plan.md/x")))
    #expect(IgnoredNames.isIgnored(path("dir~/plan.md")))
    #expect(!IgnoredNames.isIgnored(path("docs/.versions")))
  }
}
