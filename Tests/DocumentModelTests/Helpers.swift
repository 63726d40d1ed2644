import DocumentModel

func path(_ text: String) -> DocumentPath { DocumentPath(text) }

func fileContent(_ text: String, executable: Bool = false) -> VersionContent {
  let bytes = Array(text.utf8)
  return .file(hash: ContentHash(of: bytes), size: UInt64(bytes.count), executable: executable)
}

func device(_ number: UInt64, _ name: String? = nil) -> VersionAuthor {
  VersionAuthor(deviceID: DeviceID(high: 0, low: number), deviceName: name ?? "device\(number)")
}

/// Records one change on `author` and inserts it into `set`.
@discardableResult
func make(
  _ author: inout VersionAuthor, _ set: inout VersionSet, _ target: String,
  _ content: VersionContent,
  parents: [VersionRecord] = [], now: UInt64 = 1_000_000, origin: RenameOrigin? = nil
) -> VersionRecord {
  let change = PendingChange(
    path: path(target), content: content, parents: parents.map(\.id), origin: origin)
  let record = author.record([change], known: set, now: now)[0]
  set.insert(record)
  return record
}
