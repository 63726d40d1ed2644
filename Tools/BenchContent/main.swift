// The content layer's figures from the pure model (no hub, no disk): how fast content is cut
// and named, and what an edit, a history and a text corpus would move and store in chunks.
// Run in release mode: `swift run -c release bench-content [--quick] [--text FOLDER]`.
// These are the model's bytes (chunks and nodes as framed for storage); the end-to-end rows,
// through mounts and hubs, come from Tools/bench once the engine syncs in chunks.
import CSodium
import ContentModel
import Crypto
import DocumentModel
import Foundation

let arguments = CommandLine.arguments
let quick = arguments.contains("--quick")
let textFolder =
  arguments.firstIndex(of: "--text").map { arguments[$0 + 1] } ?? "/usr/include"

struct Random {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
  mutating func fill(_ count: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    out.withUnsafeMutableBytes { buffer in
      let words = buffer.bindMemory(to: UInt64.self)
      for index in words.indices { words[index] = next() }
    }
    return out
  }
  mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

/// The processor time `work` takes on this thread: unlike the wall clock, it holds when other
/// processes share the machine (a small virtual machine's two cores often are).
func seconds(_ work: () -> Void) -> Double {
  func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
  }
  let start = now()
  work()
  return now() - start
}

func mibps(_ bytes: Int, _ time: Double) -> String {
  String(format: "%7.0f MiB/s", Double(bytes) / time / 1_048_576)
}

/// Every chunk of `data` and the tree over them.
func describe(_ data: [UInt8]) -> (chunks: [(ManifestEntry, Range<Int>)], tree: ManifestTree) {
  var splitter = ContentSplitter()
  var chunks: [(ManifestEntry, Range<Int>)] = []
  var offset = 0
  data.withUnsafeBytes { buffer in
    splitter.append(buffer) { bytes, entry in
      chunks.append((entry, offset..<(offset + bytes.count)))
      offset += bytes.count
    }
  }
  let entries = splitter.finish { bytes, entry in
    chunks.append((entry, offset..<(offset + bytes.count)))
    offset += bytes.count
  }
  return (chunks, ManifestBuilder().build(chunks: entries))
}

/// The framed bytes of the objects of `description` that `known` lacks, and adds them to it:
/// what a device would upload (or a second device fetch) for this version.
func newBytes(
  _ data: [UInt8], _ description: (chunks: [(ManifestEntry, Range<Int>)], tree: ManifestTree),
  known: inout Set<ObjectID>
) -> Int {
  let compressor = ObjectCompressor()
  var total = 0
  for (entry, range) in description.chunks where !known.contains(entry.id) {
    known.insert(entry.id)
    total += data[range].withUnsafeBytes { compressor.frame($0).count }
  }
  for (id, _, encoded) in description.tree.nodes where !known.contains(id) {
    known.insert(id)
    total += compressor.frame(encoded).count
  }
  return total
}

var random = Random(state: 42)

// 1. Speed, one core.
let speedSize = quick ? 64 << 20 : 512 << 20
let speedData = random.fill(speedSize)
print("== speed, one core (processor time), \(speedSize >> 20) MiB of random bytes (best of 3)")
func best(_ work: () -> Void) -> Double { (0..<3).map { _ in seconds(work) }.min()! }
let sha = best { _ = SHA256.hash(data: speedData) }
let blake2b = best {
  _ = speedData.withUnsafeBytes { ObjectHasher(scheme: .blake2b).id(of: $0, kind: .chunk) }
}
// BLAKE3 over 64 KiB pieces, as chunk ids are: its SIMD kernels work across a chunk's 1 KiB
// blocks, so the piece size matters, unlike for the hashes above.
let blake3 = best {
  let hasher = ObjectHasher(scheme: .blake3)
  speedData.withUnsafeBytes { buffer in
    for start in stride(from: 0, to: buffer.count, by: 64 << 10) {
      _ = hasher.id(
        of: UnsafeRawBufferPointer(rebasing: buffer[start..<min(start + (64 << 10), buffer.count)]),
        kind: .chunk)
    }
  }
}
let chunker = ContentChunker()
let cutOnly = best {
  speedData.withUnsafeBytes { buffer in
    var offset = 0
    while offset < buffer.count {
      offset += chunker.cut(UnsafeRawBufferPointer(rebasing: buffer[offset...]), isFinal: true)!
    }
  }
}
let cutAndHash = best {
  var splitter = ContentSplitter()
  speedData.withUnsafeBytes { splitter.append($0) { _, _ in } }
  _ = ManifestBuilder().build(chunks: splitter.finish { _, _ in })
}
let compressor = ObjectCompressor()
let withFrames = best {
  var splitter = ContentSplitter()
  speedData.withUnsafeBytes { splitter.append($0) { bytes, _ in _ = compressor.frame(bytes) } }
  _ = splitter.finish { bytes, _ in _ = compressor.frame(bytes) }
}
print("SHA-256 alone (swift-crypto)          \(mibps(speedSize, sha))")
print("BLAKE2b alone (libsodium)             \(mibps(speedSize, blake2b))")
print("BLAKE3 alone, 64 KiB pieces (ids)     \(mibps(speedSize, blake3))")
print("chunk boundaries alone (FastCDC)      \(mibps(speedSize, cutOnly))")
print(
  "chunking + ids + manifest             \(mibps(speedSize, cutAndHash))  \(String(format: "%.2f", sha / cutAndHash)) × SHA-256 alone"
)
print("  + zstd framing (incompressible)     \(mibps(speedSize, withFrames))")

// 1b. Sealing (issue 41: not wired into sync yet), one core, the same random bytes in 64 KiB
// chunks: `ObjectSealer` (AES-256-GCM under a key per seal, padding and framing included), the
// other AEADs it was chosen against, then the whole pipeline of an encrypted push.
print("\n== sealing 64 KiB chunks, one core (processor time, best of 3)")
let sealKeys = EpochKeys(epoch: 1, key: .random())
let sealer = ObjectSealer(keys: sealKeys)
let sealKeyring = try! LibraryKeys.create(
  passphrase: "bench", parameters: .fastest, device: DeviceID(high: 1, low: 1)
).keys.keyring()
let pieces: [[UInt8]] = stride(from: 0, to: speedSize, by: 64 << 10).map {
  [ObjectFrame.raw.rawValue] + Array(speedData[$0..<min($0 + (64 << 10), speedSize)])
}
let pieceID = ObjectID(bytes: [UInt8](repeating: 7, count: 32))!
let sealOnly = best {
  for piece in pieces { _ = sealer.seal(frame: piece, id: pieceID, kind: .chunk) }
}
let sealedPieces = pieces.map {
  ObjectSealer(keys: sealKeyring.current).seal(frame: $0, id: pieceID, kind: .chunk)
}
let openOnly = best {
  for piece in sealedPieces {
    _ = try! ObjectSealer.open(
      piece, id: pieceID, kind: .chunk, keyring: sealKeyring, maximumSize: 256 << 10)
  }
}
let chachaKey = SymmetricKey(size: .bits256)
let sodiumKey = [UInt8](repeating: 3, count: 32)
let sodiumNonce = [UInt8](repeating: 4, count: 24)
let xchacha = best {
  for piece in pieces {
    var out = [UInt8](repeating: 0, count: piece.count + 16)
    _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
      &out, nil, piece, UInt64(piece.count), nil, 0, nil, sodiumNonce, sodiumKey)
  }
}
let chachaPoly = best {
  for piece in pieces { _ = try! ChaChaPoly.seal(piece, using: chachaKey).combined }
}
let aesGCM = best {
  for piece in pieces { _ = try! AES.GCM.seal(piece, using: chachaKey).combined }
}
let encryptedPush = best {
  let keyed = ObjectHasher(keys: sealKeys.content)
  var splitter = ContentSplitter(chunker: ContentChunker(keys: sealKeys.content), hasher: keyed)
  let seal = { (bytes: UnsafeRawBufferPointer, entry: ManifestEntry) in
    _ = sealer.seal(frame: compressor.frame(bytes), id: entry.id, kind: .chunk)
  }
  speedData.withUnsafeBytes { splitter.append($0, seal) }
  _ = splitter.finish(seal)
}
print("seal (ObjectSealer: AES-GCM, own key) \(mibps(speedSize, sealOnly))")
print("open (ObjectSealer)                   \(mibps(speedSize, openOnly))")
print("XChaCha20-Poly1305 seal (libsodium)   \(mibps(speedSize, xchacha))")
print("ChaChaPoly seal (swift-crypto)        \(mibps(speedSize, chachaPoly))")
print("AES-256-GCM seal (swift-crypto)       \(mibps(speedSize, aesGCM))")
print("chunking + keyed ids + zstd + seal    \(mibps(speedSize, encryptedPush))")
// Unlocking: Argon2id at the standard parameters, once (it is seconds, not MiB/s).
let unlockStart = Date()
let unlock = seconds {
  _ = try! PassphraseParameters.standard.key(
    passphrase: "bench", salt: [UInt8](repeating: 1, count: PassphraseParameters.saltSize))
}
let unlockWall = Date().timeIntervalSince(unlockStart)
let standard = PassphraseParameters.standard
print(
  "Argon2id unlock, \(standard.passes) passes over \(standard.memoryBytes >> 20) MiB   \(String(format: "%7.2f s (%.2f s wall)", unlock, unlockWall))"
)

// 2. One-byte edits of a large file.
let largeSize = quick ? 128 << 20 : 1 << 30
let rounds = quick ? 6 : 20
print("\n== one-byte edits at random offsets of a \(largeSize >> 20) MiB file, \(rounds) of each")
let large = random.fill(largeSize)
let original = describe(large)
var baseKnown = Set<ObjectID>()
_ = newBytes(large, original, known: &baseKnown)
print(
  "chunks \(original.chunks.count), nodes \(original.tree.nodes.count), height \(original.tree.root.height), manifest \(original.tree.nodes.reduce(0) { $0 + $1.encoded.count }) bytes"
)
for insert in [false, true] {
  var moved: [Int] = []
  for _ in 0..<rounds {
    var edited = large
    let offset = random.below(largeSize)
    if insert {
      edited.insert(UInt8(random.below(256)), at: offset)
    } else {
      edited[offset] ^= 0x5a
    }
    var known = baseKnown
    moved.append(newBytes(edited, describe(edited), known: &known))
  }
  moved.sort()
  print(
    "\(insert ? "insert   " : "overwrite") bytes up (= bytes down): median \(moved[moved.count / 2] >> 10) KiB, worst \(moved.last! >> 10) KiB"
  )
}

// 3. A history of small edits.
let historySize = quick ? 20 << 20 : 100 << 20
let versions = quick ? 20 : 100
print("\n== \(versions) versions of a \(historySize >> 20) MiB file, 4 KiB changed in each")
for insert in [false, true] {
  var data = random.fill(historySize)
  var known = Set<ObjectID>()
  var stored = newBytes(data, describe(data), known: &known)
  for _ in 1..<versions {
    let offset = random.below(data.count - 4096)
    let patch = random.fill(4096)
    if insert {
      data.insert(contentsOf: patch, at: offset)
    } else {
      data.replaceSubrange(offset..<(offset + 4096), with: patch)
    }
    stored += newBytes(data, describe(data), known: &known)
  }
  print(
    "\(insert ? "4 KiB inserted   " : "4 KiB overwritten") all versions stored: \(stored >> 20) MiB = \(String(format: "%.2f", Double(stored) / Double(historySize))) × the file"
  )
}

// 4. A corpus of text documents.
print("\n== text documents under \(textFolder), up to 100 MiB")
var corpus: [[UInt8]] = []
var corpusSize = 0
if let walker = FileManager.default.enumerator(atPath: textFolder) {
  while let name = walker.nextObject() as? String, corpusSize < 100 << 20 {
    let path = textFolder + "/" + name
    guard let bytes = FileManager.default.contents(atPath: path).map({ [UInt8]($0) }),
      !bytes.isEmpty, !bytes.contains(0)
    else { continue }
    corpus.append(bytes)
    corpusSize += bytes.count
  }
}
var corpusKnown = Set<ObjectID>()
var pushed = 0
for document in corpus { pushed += newBytes(document, describe(document), known: &corpusKnown) }
print(
  "\(corpus.count) documents, \(corpusSize >> 20) MiB: pushed \(pushed >> 20) MiB = \(String(format: "%.0f", 100 * Double(pushed) / Double(max(corpusSize, 1)))) %"
)
