import DocumentModel
import Hub
import LocalStore
import SyncEngine
import Testing

/// A record that a later docsync made, with a field this one does not know: the device says in
/// one line to upgrade, and neither skips the record nor applies anything after it.
@Suite("records from a newer docsync")
struct NewerFormatTests {
  /// A directory record at `path` with one more optional field, tagged `field`, and the id its
  /// bytes hash to: what a later docsync would send.
  static func newerRecord(at path: String, field: UInt8) -> HubRecord {
    let record = VersionRecord(
      path: DocumentPath(path), content: .directory, parents: [],
      modified: HLCTimestamp(wallMilliseconds: 1_700_000_000_000),
      deviceID: DeviceID(high: 9, low: 9),
      deviceName: "newer")
    let payload = record.encoded + [field, 0x01, 0x02, 0x03]
    return HubRecord(id: Digest256.sha256(payload).bytes, payload: payload)
  }

  @Test func aRecordWithAFieldFromALaterDocsyncStopsSyncingWithOneLineThatSaysWhatToDo()
    async throws
  {
    let library = Library()
    let a = try library.device("a")
    let b = try library.device("b")
    try a.write("doc.txt", "first\n")
    try await a.sync()
    try await b.sync()
    let hub = try SQLiteHub(path: library.folder + "/hub.sqlite")
    try await hub.append([Self.newerRecord(at: "from-the-future", field: 3)])
    try a.write("doc.txt", "second\n")
    // A's own push goes up (a newer device can read it); its pull stops at the new record.
    await #expect {
      try await a.sync()
    } throws: { error in
      let text = "\(error)"
      return text.contains("made by a newer docsync") && text.contains("upgrade docsync")
        && !text.contains("\n")
    }
    await #expect {
      try await b.sync()
    } throws: { error in "\(error)".contains("upgrade docsync on this device") }
    // Nothing after the record is taken as if it were not there.
    #expect(try b.read("doc.txt") == "first\n")
    guard case .cannotSync(_, let reason) = b.engine.status().state else {
      Issue.record("status does not say why syncing stopped: \(b.engine.status().state)")
      return
    }
    #expect(reason.contains("upgrade docsync"))
    await a.stop()
    await b.stop()
  }
}

/// What state migration v8 does for a device upgraded from a docsync that skipped records: it
/// pulls every record once more, and what it knows already changes nothing.
@Suite("pulling every record again")
struct PullAgainTests {
  @Test func aDeviceThatPullsEverythingAgainEndsWhereItWasAndGoesOn() async throws {
    let library = Library()
    let a = try library.device("a")
    var b = try library.device("b")
    for index in 0..<30 { try a.write("doc\(index).txt", "text \(index)\n") }
    try a.write("doc0.txt", "edited\n")
    try await a.sync()
    try await b.sync()
    try b.write("doc1.txt", "b's edit\n")
    try await b.sync()
    try await a.sync()
    let before = b.engine.status()
    await b.stop()
    // The cursor as v8 leaves it: from the start of the hub's records.
    let store = try LocalStore(directory: library.folder + "/b")
    try store.applySync([.setMetadata(key: "cursor", value: [])])
    store.shutdown()
    b = try library.device("b")
    try await b.sync()
    #expect(try b.read("doc0.txt") == "edited\n")
    #expect(try b.read("doc1.txt") == "b's edit\n")
    let after = b.engine.status()
    #expect(after.conflicts.isEmpty && before.conflicts.isEmpty)
    #expect(after.pendingUploads == 0, "nothing it knew is sent again")
    try a.write("doc2.txt", "later\n")
    try await a.sync()
    try await b.sync()
    #expect(try b.read("doc2.txt") == "later\n")
    await a.stop()
    await b.stop()
  }
}
