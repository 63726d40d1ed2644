import DocumentModel
import Hub

@testable import SyncEngine

/// Records and owners for the tests of the engine's state owners: no hub, no disk, no device.
enum OwnerFixtures {
  static func file(_ text: String) -> VersionContent {
    let bytes = Array(text.utf8)
    return .file(hash: ContentHash(of: bytes), size: UInt64(bytes.count), executable: false)
  }

  /// A version of `path` holding `text`, made by device `device` at `time`.
  static func record(
    _ path: String, _ text: String, parents: [VersionRecord] = [], time: UInt64 = 1_000,
    device: UInt64 = 1
  ) -> VersionRecord {
    VersionRecord(
      path: DocumentPath(path), content: file(text), parents: parents.map(\.id),
      modified: HLCTimestamp(wallMilliseconds: time), deviceID: DeviceID(high: 0, low: device),
      deviceName: "device\(device)")
  }

  /// What a device knows before it has seen anything.
  static func emptyLibrary() -> LibraryKnowledge {
    LibraryKnowledge(
      known: VersionSet(),
      author: VersionAuthor(deviceID: DeviceID(high: 0, low: 1), deviceName: "here"),
      cursor: HubCursor(serialized: ""), erasureCursor: HubCursor(serialized: ""))
  }

  /// A document in conflict at `path`: `edits` made on separate devices over one base.
  static func conflict(at path: String, _ edits: [String]) -> VersionSet {
    let base = record(path, "base\n", device: 9)
    var set = VersionSet([base])
    for (index, text) in edits.enumerated() {
      set.insert(record(path, text, parents: [base], time: 2_000, device: UInt64(index)))
    }
    return set
  }

  /// The merge of the conflict at `path` (text merges need no content to be planned).
  static func mergePlan(at path: String, _ edits: [String]) -> AutoMerge? {
    let set = conflict(at: path, edits)
    return AutoMerge.plan(at: DocumentPath(path), in: set, state: LibraryState(set), policy: .text)
  }
}
