// hub-stress HUB WRITER-ID COUNT [BATCH]
//
// Appends COUNT records, each naming a small blob of its own, to HUB (a SQLite hub file or a
// postgres:// URL, as docsync's --hub takes it), in
// batches of BATCH (default 5): put the batch's blobs, then append the batch. Several of these
// racing on one hub are how HubTests checks that concurrent processes neither lose nor
// duplicate records. Record i of writer W has id SHA-256("hub-stress W i") and payload "W i".

import Foundation
import Hub
import PostgresHub

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("hub-stress: \(message)\n".utf8))
  exit(1)
}

let arguments = CommandLine.arguments
guard (4...5).contains(arguments.count), let count = Int(arguments[3]), count >= 0 else {
  FileHandle.standardError.write(Data("usage: hub-stress HUB WRITER-ID COUNT [BATCH]\n".utf8))
  exit(2)
}
let hubPath = arguments[1]
let writer = arguments[2]
let batchSize = arguments.count == 5 ? Int(arguments[4]) ?? 0 : 5
guard batchSize > 0 else { fail("BATCH must be a positive number") }

let hub: any Hub
do {
  hub = try openAnyHub(location: hubPath)
} catch {
  fail("\(error)")
}

// One scratch file, rewritten for each blob: putBlob takes a file descriptor.
let scratchPath = NSTemporaryDirectory() + "/hub-stress-\(getpid())-\(UUID().uuidString)"
let scratch = open(scratchPath, O_RDWR | O_CREAT | O_EXCL, 0o600)
guard scratch >= 0 else {
  fail("cannot create a scratch file: \(String(cString: strerror(errno)))")
}
unlink(scratchPath)

func putBlob(_ content: [UInt8]) async throws(HubError) -> [UInt8] {
  guard ftruncate(scratch, 0) == 0,
    content.withUnsafeBytes({ pwrite(scratch, $0.baseAddress, $0.count, 0) }) == content.count
  else { fail("cannot write the scratch file: \(String(cString: strerror(errno)))") }
  let hash = HubHash.sha256(content)
  try await hub.putBlob(hash: hash, from: scratch)
  return hash
}

let started = ContinuousClock.now
do {
  var next = 0
  while next < count {
    var batch: [HubRecord] = []
    for index in next..<min(next + batchSize, count) {
      let blob = try await putBlob(Array("blob of \(writer) \(index)\n".utf8))
      batch.append(
        HubRecord(
          id: HubHash.sha256(Array("hub-stress \(writer) \(index)".utf8)),
          payload: Array("\(writer) \(index)".utf8),
          blobs: [blob]))
    }
    try await hub.append(batch)
    next += batch.count
  }
} catch {
  fail("\(error)")
}
print("hub-stress: \(writer) appended \(count) records in \(ContinuousClock.now - started)")
