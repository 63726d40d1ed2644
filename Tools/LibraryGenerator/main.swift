// Writes a large library straight into a SQLite hub and one device's state folder, with the real
// schemas (through `SQLiteHub` and `LocalStore`), so that `Tools/bench-startup.py` can time a
// mount of it: going through FUSE would take hours for a million versions.
//
// Usage: library-generator HUB STATE [--documents N] [--versions-per-document K]
//
// Each document `dNNN/fNNNNNN.txt` gets K versions in one line of history, the state folder
// shows the last one as its working file (size and times recorded, so the mount finds nothing
// to hash), the device's cursor is at the end of the hub, and its last prune is now.
import DocumentModel
import Foundation
import Glibc
import Hub
import LocalStore
import SyncEngine

struct Arguments {
  var hub = ""
  var state = ""
  var documents = 100_000
  var versionsPerDocument = 10

  init(_ arguments: [String]) {
    var positional: [String] = []
    var index = 0
    while index < arguments.count {
      switch arguments[index] {
      case "--documents":
        index += 1
        documents = Int(arguments[index])!
      case "--versions-per-document":
        index += 1
        versionsPerDocument = Int(arguments[index])!
      default:
        positional.append(arguments[index])
      }
      index += 1
    }
    guard positional.count == 2 else {
      FileHandle.standardError.write(
        Data(
          "usage: library-generator HUB STATE [--documents N] [--versions-per-document K]\n".utf8))
      exit(2)
    }
    hub = positional[0]
    state = positional[1]
  }
}

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("library-generator: \(message)\n".utf8))
  exit(1)
}

func bigEndian(_ word: UInt64) -> [UInt8] {
  (0..<8).map { UInt8(truncatingIfNeeded: word >> UInt64(56 - 8 * $0)) }
}

let arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
let started = Date()
let hub: SQLiteHub
let store: LocalStore
do {
  hub = try SQLiteHub(path: arguments.hub)
  store = try LocalStore(directory: arguments.state)
} catch {
  fail("\(error)")
}

// Ten contents shared by every version: the start-up cost is in records, not in content.
let contents = (0..<10).map { Array("bench content \($0)\n".utf8) }
let hashes = contents.map { ContentHash(of: $0) }
for (content, hash) in zip(contents, hashes) {
  let temporary = arguments.state + "/generator-blob"
  let fd = open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
  guard fd >= 0, write(fd, content, content.count) == content.count else { fail("cannot write") }
  lseek(fd, 0, SEEK_SET)
  do {
    try await hub.putBlob(hash: hash.bytes, from: fd)
  } catch {
    fail("\(error)")
  }
  close(fd)
  let blob = store.blobPath(hex: hash.hex)
  mkdir(store.blobFolder, 0o700)
  mkdir(String(blob.dropLast(hash.hex.count + 1)), 0o700)
  guard rename(temporary, blob) == 0 else { fail("cannot store blob \(blob)") }
}

let deviceID = DeviceID(high: 0x6265_6e63_6800_0000, low: 1)
var author = VersionAuthor(deviceID: deviceID, deviceName: "bench")
let empty = VersionSet()
let uid = getuid()
let gid = getgid()
let contentTime: Int64 = 1_700_000_000_000_000_000
let now = UInt64(Date().timeIntervalSince1970 * 1000)
let folders = (arguments.documents + 999) / 1000
// Inodes below 16 are the mount's own (2 is `.versions`, 3 is `.history`): the tree starts
// above them, as DocumentFileSystem allocates.
var nextInode: UInt64 = 16

@MainActor func node(_ inode: UInt64, mode: UInt32) -> InodeRecord {
  InodeRecord(
    inode: inode, mode: mode, uid: uid, gid: gid, rdev: 0, accessTime: contentTime,
    modificationTime: contentTime, changeTime: contentTime, target: nil)
}

var tree: [Change] = [.putInode(node(1, mode: UInt32(S_IFDIR) | 0o755))]
var hubBatch: [HubRecord] = []
var stateBatch: [SyncChange] = []
var total = 0

@MainActor func flush(force: Bool) async {
  guard force || hubBatch.count >= 5000 else { return }
  do {
    try await hub.append(hubBatch)
    try store.applySync(stateBatch)
    try store.apply(tree)
  } catch {
    fail("\(error)")
  }
  hubBatch = []
  stateBatch = []
  tree = []
}

@MainActor func add(_ record: VersionRecord) {
  hubBatch.append(
    HubRecord(
      id: record.id.bytes, payload: record.encoded,
      blobs: record.content.blobHash.map { [$0.bytes] } ?? []))
  stateBatch.append(.addVersion(record.stored))
  total += 1
}

for folder in 0..<folders {
  let name = Array(String(format: "d%03d", folder).utf8)
  let folderPath = DocumentPath(components: [name])
  let record = author.record(
    [PendingChange(path: folderPath, content: .directory, parents: [])], known: empty, now: now)[0]
  add(record)
  stateBatch.append(
    .show(
      ShownRecord(
        path: folderPath.bytes, versionID: record.id.bytes, size: -1, modificationTime: 0,
        changeTime: 0)))
  let folderInode = nextInode
  nextInode += 1
  tree.append(.putInode(node(folderInode, mode: UInt32(S_IFDIR) | 0o755)))
  tree.append(.putEntry(EntryRecord(parent: 1, name: name, inode: folderInode)))
  for document in (folder * 1000)..<min(arguments.documents, (folder + 1) * 1000) {
    let fileName = Array(String(format: "f%06d.txt", document).utf8)
    let path = DocumentPath(components: [name, fileName])
    var parents: [VersionID] = []
    var last: VersionRecord?
    for version in 0..<arguments.versionsPerDocument {
      let index = (document + version) % contents.count
      let change = PendingChange(
        path: path,
        content: .file(hash: hashes[index], size: UInt64(contents[index].count), executable: false),
        parents: parents, contentTime: contentTime)
      let record = author.record([change], known: empty, now: now)[0]
      add(record)
      parents = [record.id]
      last = record
    }
    let inode = nextInode
    nextInode += 1
    let index = (document + arguments.versionsPerDocument - 1) % contents.count
    let working = LocalStore.workingFileName(inode)
    let fd = openat(store.workingFiles, working, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0, write(fd, contents[index], contents[index].count) == contents[index].count
    else { fail("cannot write working file \(working)") }
    let times = [
      timespec(tv_sec: Int(contentTime / 1_000_000_000), tv_nsec: 0),
      timespec(tv_sec: Int(contentTime / 1_000_000_000), tv_nsec: 0),
    ]
    futimens(fd, times)
    var info = stat()
    fstat(fd, &info)
    close(fd)
    tree.append(.putInode(node(inode, mode: UInt32(S_IFREG) | 0o644)))
    tree.append(.putEntry(EntryRecord(parent: folderInode, name: fileName, inode: inode)))
    stateBatch.append(
      .show(
        ShownRecord(
          path: path.bytes, versionID: last!.id.bytes, size: Int64(info.st_size),
          modificationTime: Int64(info.st_mtim.tv_sec) * 1_000_000_000
            + Int64(info.st_mtim.tv_nsec),
          changeTime: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec))))
    await flush(force: false)
  }
}
tree.append(.setNextInode(nextInode))
await flush(force: true)

// The device has pulled everything: its cursor is the hub's last one.
let cursor: HubCursor
do {
  cursor = try await hub.records(after: HubCursor(serialized: String(total - 1)), limit: 10).cursor
  try store.applySync([
    .setMetadata(key: "cursor", value: Array(cursor.serialized.utf8)),
    .setMetadata(key: "device_id", value: bigEndian(deviceID.high) + bigEndian(deviceID.low)),
    .setMetadata(key: "device_name", value: Array("bench".utf8)),
    .setMetadata(key: "last_prune", value: Array(String(now).utf8)),
  ])
} catch {
  fail("\(error)")
}
store.checkpoint()
print(
  "generated \(arguments.documents) documents, \(total) versions in "
    + String(format: "%.1f s", Date().timeIntervalSince(started)))
