import DocumentModel
import Hub
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
    try await hub.append([Self.newerRecord(at: "from-the-future", field: 2)])
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
