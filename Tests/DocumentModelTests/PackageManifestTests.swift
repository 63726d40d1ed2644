import DocumentModel
import Testing

/// A package version's manifest: its entries, its canonical encoding (pinned), what it
/// refuses, and the diff that lets versions share content.
@Suite("Package manifest")
struct PackageManifestTests {
  private func hash(_ text: String) -> ContentHash { ContentHash(of: Array(text.utf8)) }

  private func file(
    _ target: String, _ text: String, mode: UInt16 = 0o644, time: Int64 = 1_000,
    chunks: ContentRoot? = nil
  ) -> PackageEntry {
    .file(
      DocumentPath(target), hash: hash(text), size: UInt64(text.utf8.count), chunks: chunks,
      mode: mode, modified: time)
  }

  private func folder(_ target: String, mode: UInt16 = 0o755) -> PackageEntry {
    .folder(DocumentPath(target), mode: mode)
  }

  /// A small git directory, as a snapshot would list it.
  private func repository() throws -> PackageManifest {
    let root = ContentRoot(
      id: Digest256(bytes: [UInt8](repeating: 7, count: 32))!, height: 1, size: 70_000,
      scheme: .blake3)
    return try PackageManifest(entries: [
      file("HEAD", "ref: refs/heads/main\n"),
      folder("refs"), folder("refs/heads"), file("refs/heads/main", "c0ffee\n", time: 2_000),
      folder("objects"), folder("objects/pack"),
      .file(
        DocumentPath("objects/pack/pack-1.pack"), hash: hash("pack"), size: 70_000, chunks: root,
        mode: 0o444, modified: -5),
      .symlink(DocumentPath("hooks-link"), target: Array("../hooks".utf8), modified: 3),
      file("hooks/pre-commit", "#!/bin/sh\n", mode: 0o755), folder("hooks"),
      file("caf\u{E9}", "nfc"), file("cafe\u{301}", "nfd"),
      .file(
        DocumentPath(components: [[0xFF, 0x2E, 0x62, 0x69, 0x6E]]), hash: hash("raw"), size: 3,
        mode: 0o600, modified: Int64.min),
    ])
  }

  @Test func entriesAreSortedSoOneFolderHasOneManifest() throws {
    let manifest = try repository()
    let reversed = try PackageManifest(entries: manifest.entries.reversed())
    #expect(reversed == manifest)
    #expect(reversed.encoded == manifest.encoded)
    #expect(reversed.contentHash == manifest.contentHash)
    for (earlier, later) in zip(manifest.entries, manifest.entries.dropFirst()) {
      #expect(earlier.path < later.path)
    }
    #expect(manifest.entry(at: DocumentPath("refs/heads/main"))?.size == 7)
    #expect(manifest.entry(at: DocumentPath("refs/heads/master")) == nil)
    #expect(manifest.fileBytes == 70_000 + 21 + 7 + 10 + 3 + 3 + 3)
  }

  @Test func theEncodingRoundTrips() throws {
    let manifest = try repository()
    let decoded = try PackageManifest(decoding: manifest.encoded)
    #expect(decoded == manifest)
    #expect(decoded.encoded == manifest.encoded)
    #expect(try PackageManifest(decoding: PackageManifest.empty.encoded) == .empty)
    #expect(PackageManifest.empty.encoded == [1, 0, 0, 0, 0])
  }

  @Test func theEncodingIsPinned() throws {
    let manifest = try PackageManifest(entries: [
      .symlink(DocumentPath("l"), target: Array("a/b".utf8), modified: -1),
      .file(
        DocumentPath("a/b"), hash: hash("hello"), size: 5,
        chunks: ContentRoot(
          id: Digest256(bytes: [UInt8](repeating: 0x11, count: 32))!, height: 0, size: 5,
          scheme: .blake3),
        mode: 0o100644, modified: 1_700_000_000_123_456_789),
      .folder(DocumentPath("a"), mode: 0o40755),
    ])
    // Assembled by hand from the layout in PackageManifest+Encoding.swift, hashed by Python's
    // hashlib: format, count 3; folder `a` 0755; file `a/b` 0644, SHA-256 of "hello", 5 bytes,
    // its time, a BLAKE3 chunk tree of height 0; symlink `l` to `a/b` at -1 ns.
    let expected =
      "0100000003"
      + "000000010000000161" + "02" + "01ed" + "00"
      + "00000002000000016100000001" + "62" + "01" + "01a4"
      + "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
      + "0000000000000005" + "17979cfe3d85cd15"
      + "02" + "00" + String(repeating: "11", count: 32) + "0000000000000005" + "00"
      + "00000001000000016c" + "03" + "01ff" + "00000003612f62" + "ffffffffffffffff" + "00"
    #expect(hex(manifest.encoded) == expected)
    #expect(
      manifest.contentHash.hex == "dce930f8f428859ff1ea6b144c8333ca11a67306166324e562c8a1235f0c7bcb"
    )
    #expect(try PackageManifest(decoding: bytes(expected)) == manifest)
  }

  @Test func malformedBytesAreRefusedWithOneLine() throws {
    let good = try repository().encoded
    var cases: [([UInt8], PackageManifestError)] = [
      ([], .truncated),
      ([0, 0, 0, 0, 0], .malformed("unknown format 0")),
      ([2, 0, 0, 0, 0], .newerFormat(2)),
      ([1, 0, 0, 0, 9], .malformed("9 entries in 5 bytes")),
      (good + [0], .malformed("bytes after the last entry")),
    ]
    // An entry of kind 4 (a deletion: no package lists one).
    cases.append(
      (
        [1, 0, 0, 0, 1] + [0, 0, 0, 1, 0, 0, 0, 1, 0x78, 4, 1, 0xed, 0], .malformed("entry kind 4")
      ))
    for (input, error) in cases {
      #expect(throws: error) { try PackageManifest(decoding: input) }
      #expect(!error.description.contains("\n"))
    }
    // Every cut of a good encoding is refused.
    for length in 0..<good.count {
      #expect(throws: PackageManifestError.self) {
        try PackageManifest(decoding: Array(good[..<length]))
      }
    }
  }

  @Test func aFieldFromANewerDocsyncAsksForAnUpgrade() throws {
    let plain = try PackageManifest(entries: [folder("a"), file("a/b", "x")]).encoded
    // The file's end byte is the last one: put a field of tag 7 (and its unknown value) there.
    var newer = plain
    newer[newer.count - 1] = 7
    newer += [0xAA, 0xBB, 0]
    #expect(throws: PackageManifestError.newerField(7)) { try PackageManifest(decoding: newer) }
    #expect(PackageManifestError.newerField(7).description.contains("upgrade docsync"))
    #expect(PackageManifestError.newerFormat(2).description.contains("upgrade docsync"))
    // A known tag where it cannot be: a chunk tree on a folder.
    let onFolder = try PackageManifest(entries: [folder("a")]).encoded.dropLast() + [2]
    #expect(
      throws: PackageManifestError.invalidEntry(DocumentPath("a"), "field 2 where it cannot be")
    ) {
      try PackageManifest(decoding: Array(onFolder))
    }
  }

  @Test func entriesNoDeviceMakesAreRefused() throws {
    let x = hash("x")
    func refused(_ entries: [PackageEntry], _ why: String) {
      #expect(throws: PackageManifestError.self, "\(why)") { try PackageManifest(entries: entries) }
    }
    refused([file("a", "1"), file("a", "2")], "a duplicate")
    refused([file("a/b", "1")], "no folder for a/b")
    refused([file("a", "1"), file("a/b", "2")], "a file as a folder")
    refused([file("..", "1")], "a dot-dot name")
    refused([.file(DocumentPath.root, hash: x, size: 1, mode: 0o644, modified: 0)], "the root")
    refused([.symlink(DocumentPath("l"), target: [], modified: 0)], "an empty target")
    refused([.symlink(DocumentPath("l"), target: [0x61, 0], modified: 0)], "a NUL in a target")
    refused(
      [
        .file(
          DocumentPath("f"), hash: x, size: 10,
          chunks: ContentRoot(id: x.digest, height: 0, size: 11, scheme: .blake3), mode: 0o644,
          modified: 0)
      ], "chunks over other bytes")
    refused(
      [
        .file(
          DocumentPath("f"), hash: x, size: RecordCheck.maximumFileSize + 1, mode: 0, modified: 0)
      ],
      "a file too large")
    // What the constructors cannot make, bytes can say: a mode beyond 0o777, a symlink's mode.
    var wideMode = try PackageManifest(entries: [folder("a")]).encoded
    wideMode[wideMode.count - 3] = 0x02
    #expect(throws: PackageManifestError.invalidEntry(DocumentPath("a"), "mode 1355")) {
      try PackageManifest(decoding: wideMode)
    }
    // Two entries of one length, swapped.
    let ordered = try PackageManifest(entries: [file("a", "1"), file("b", "2")]).encoded
    let length = (ordered.count - 5) / 2
    let unordered = Array(ordered[..<5] + ordered[(5 + length)...] + ordered[5..<(5 + length)])
    #expect(throws: PackageManifestError.malformed("entries out of order")) {
      try PackageManifest(decoding: unordered)
    }
  }

  @Test func mutatedBytesAreRefusedOrAreThatVeryManifest() throws {
    let good = try repository().encoded
    var random = SplitMix64(state: 43)
    for _ in 0..<2_000 {
      var bytes = good
      for _ in 0...random.below(3) {
        bytes[random.below(bytes.count)] = UInt8(truncatingIfNeeded: random.next())
      }
      if let decoded = try? PackageManifest(decoding: bytes) {
        // Accepted only in canonical form: one manifest, one encoding.
        #expect(decoded.encoded == bytes)
      }
    }
  }

  @Test func theDiffSaysWhatChangedAndWhatContentIsNew() throws {
    let old = try repository()
    var entries = old.entries.filter { $0.path != DocumentPath("hooks-link") }
    entries = entries.map { entry in
      switch entry.path {
      case DocumentPath("refs/heads/main"): file("refs/heads/main", "beef\n", time: 4_000)
      case DocumentPath("HEAD"): file("HEAD", "ref: refs/heads/main\n", time: 9_000)
      case DocumentPath("hooks/pre-commit"): file("hooks/pre-commit", "#!/bin/sh\n", mode: 0o644)
      default: entry
      }
    }
    entries += [
      folder("objects/ab"), file("objects/ab/cd", "new object"),
      // The same bytes as an old file under a new name: nothing to move.
      file("ORIG_HEAD", "c0ffee\n"),
      file("objects/ab/ef", "new object"),
    ]
    let new = try PackageManifest(entries: entries)
    let diff = old.diff(to: new)
    #expect(
      diff.added.map(\.path.description) == [
        "ORIG_HEAD", "objects/ab", "objects/ab/cd", "objects/ab/ef",
      ])
    #expect(diff.removed.map(\.path.description) == ["hooks-link"])
    #expect(diff.changed.map(\.path.description) == ["hooks/pre-commit", "refs/heads/main"])
    #expect(diff.retimed.map(\.path.description) == ["HEAD"])
    #expect(diff.newContent == [hash("beef\n"), hash("new object")].sorted())
    #expect(old.diff(to: old).isEmpty)
    #expect(!diff.isEmpty)
    let back = new.diff(to: old)
    #expect(back.added.map(\.path) == diff.removed.map(\.path))
    #expect(back.removed.map(\.path) == diff.added.map(\.path))
    // Going back needs nothing new: ORIG_HEAD still holds the old main's bytes.
    #expect(back.newContent.isEmpty)
  }

  @Test func theSameBytesAtOtherTimesAreTheSamePackage() throws {
    let here = try PackageManifest(entries: [folder("a"), file("a/b", "x", time: 1)])
    let there = try PackageManifest(entries: [folder("a"), file("a/b", "x", time: 2)])
    let other = try PackageManifest(entries: [folder("a"), file("a/b", "x", mode: 0o600)])
    let more = try PackageManifest(entries: [folder("a"), file("a/b", "x"), file("c", "")])
    #expect(here != there)
    #expect(here.contentHash != there.contentHash)
    #expect(here.holdsTheSame(as: there))
    #expect(!here.holdsTheSame(as: other))
    #expect(!here.holdsTheSame(as: more))
    #expect(!more.holdsTheSame(as: here))
  }

  @Test func aSnapshotIsTheLastOneWithWhatChanged() throws {
    let last = try repository()
    let next = try last.applying([
      DocumentPath("refs/heads/main"): file("refs/heads/main", "beef\n", time: 5_000),
      DocumentPath("refs/tags"): folder("refs/tags"),
      DocumentPath("refs/tags/v1"): file("refs/tags/v1", "beef\n"),
      DocumentPath("objects"): nil,
      DocumentPath("hooks"): .symlink(DocumentPath("hooks"), target: Array("/x".utf8), modified: 1),
      DocumentPath("absent"): nil,
    ])
    var expected = last.entries.filter {
      !$0.path.isEqualOrDescendant(of: DocumentPath("objects"))
        && !$0.path.isEqualOrDescendant(of: DocumentPath("hooks"))
        && $0.path != DocumentPath("refs/heads/main")
    }
    expected += [
      file("refs/heads/main", "beef\n", time: 5_000), folder("refs/tags"),
      file("refs/tags/v1", "beef\n"),
      .symlink(DocumentPath("hooks"), target: Array("/x".utf8), modified: 1),
    ]
    #expect(next == (try PackageManifest(entries: expected)))
    // A folder replaced by a folder keeps what it holds.
    let remoded = try last.applying([DocumentPath("refs"): folder("refs", mode: 0o700)])
    #expect(remoded.entry(at: DocumentPath("refs/heads/main")) != nil)
    #expect(remoded.entry(at: DocumentPath("refs"))?.mode == 0o700)
    #expect(throws: PackageManifestError.self) {
      try last.applying([DocumentPath("new/file"): file("new/file", "no folder")])
    }
    #expect(throws: PackageManifestError.self) {
      try last.applying([DocumentPath("a"): file("b", "elsewhere")])
    }
  }

  @Test func aKindChangeIsAChange() throws {
    let old = try PackageManifest(entries: [file("x", "1")])
    let new = try PackageManifest(entries: [folder("x"), file("x/y", "1")])
    let diff = old.diff(to: new)
    #expect(diff.changed.map(\.kind) == [.directory])
    #expect(diff.added.map(\.path) == [DocumentPath("x/y")])
    #expect(diff.newContent.isEmpty)
  }

  private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
  }

  private func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    return stride(from: 0, to: digits.count, by: 2).map {
      UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
    }
  }
}
