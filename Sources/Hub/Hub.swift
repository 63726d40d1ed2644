import Crypto

/// Append-only storage that devices sync through: opaque version records and content blobs.
///
/// A hub never decides a conflict. It stores what devices give it, refuses what fails an integrity
/// check, and hands every device the same records in the same order. Blobs are addressed by the
/// SHA-256 of their bytes (see ``HubHash``); records by an id their producer derives, which the
/// hub treats as opaque.
public protocol Hub: Sendable {
  /// Stores the blob read from `fileDescriptor` under `hash`, unless the hub already has it.
  ///
  /// Reads the whole file from offset 0 with `pread`, in bounded chunks, whatever the descriptor's
  /// offset (which is left alone). Throws ``HubError/integrity(_:)`` and stores nothing when the
  /// bytes' SHA-256 is not `hash`.
  func putBlob(hash: [UInt8], from fileDescriptor: Int32) async throws(HubError)

  /// Stores small blobs together (one transaction for a batch of small files, where a put each
  /// cost several), each under its key unless the hub has it; returns the keys the hub now has.
  /// A blob whose bytes do not hash to its key is left out, for ``putBlob(hash:from:)`` to
  /// refuse. The default stores none, so every blob takes `putBlob`.
  func putSmallBlobs(_ blobs: [[UInt8]: [UInt8]]) async throws(HubError) -> Set<[UInt8]>

  /// Whether ``putSmallBlobs(_:)`` stores anything, so that a caller reads small content into
  /// memory for it only then. The default says no.
  var putsSmallBlobsTogether: Bool { get }

  /// As ``putBlob(hash:from:)``; with `checked`, the caller vouches that the file holds exactly
  /// the bytes of `hash` (it hashed them itself as it wrote the file, unchanged since), and the
  /// hub may store them without hashing them again. Fetches still check every byte.
  func putBlob(hash: [UInt8], from fileDescriptor: Int32, checked: Bool) async throws(HubError)

  /// Stores the blob `hash` by taking over the file at `path` (renamed into the hub, not
  /// copied), unless the hub already has it; true when the hub has the blob now. False when
  /// this hub cannot take the file (another file system, a hub over the network, content it
  /// keeps elsewhere): the file is then where it was, and the caller puts it with
  /// ``putBlob(hash:from:checked:)``. `descriptor` is the file open for reading; `checked` says,
  /// as for `putBlob`, that the caller hashed that very file as it wrote it, unchanged since,
  /// else the hub hashes it first. The caller gives the file up: nothing may use, write or
  /// rename it any more. The default takes nothing.
  func adoptBlob(hash: [UInt8], file path: String, descriptor: Int32, checked: Bool)
    async throws(HubError) -> Bool

  /// Finishes a hand-over (``adoptBlob(hash:file:descriptor:checked:)``) that a crash cut short
  /// after the file reached the hub and before the hub recorded it: checks every byte of that
  /// file and records it when whole; true when the hub has the blob now. The default is
  /// ``hasBlob(hash:)``.
  func recoverBlob(hash: [UInt8]) async throws(HubError) -> Bool

  /// Whether a complete blob with this hash is stored.
  func hasBlob(hash: [UInt8]) async throws(HubError) -> Bool

  /// Writes the blob `hash` into `fileDescriptor` from offset 0, in bounded chunks, and truncates
  /// the file to the blob's size.
  ///
  /// Throws ``HubError/missingBlob(_:)`` when the hub does not have it, and
  /// ``HubError/integrity(_:)`` when the bytes that arrived do not hash to `hash`; the file then
  /// holds garbage and the caller discards it.
  func fetchBlob(hash: [UInt8], to fileDescriptor: Int32) async throws(HubError)

  /// The bytes of the blobs among `hashes` that the hub has and that are no larger than
  /// `sizeLimit`, read together (one round trip for a page of small files, where a fetch each
  /// cost several), each checked against its hash on this side as ``fetchBlob(hash:to:)``
  /// checks. A hash left out (missing, larger, or arriving damaged) is for `fetchBlob`, which
  /// reports what is wrong. The default reads none, so every blob takes `fetchBlob`.
  func smallBlobs(hashes: [[UInt8]], sizeLimit: Int) async throws(HubError) -> [[UInt8]: [UInt8]]

  /// Appends records, all or none.
  ///
  /// A record whose id the hub already has is skipped, so a retried upload is harmless. A record
  /// naming a blob the hub does not have is refused with ``HubError/missingBlob(_:)``: blobs go up
  /// before the records that name them, and the hub enforces it.
  func append(_ records: [HubRecord]) async throws(HubError)

  /// Up to `limit` records after `cursor`, in hub order, and the cursor to continue from.
  ///
  /// Paging from ``HubCursor/start`` sees every record exactly once, including records whose
  /// transaction commits after a later-started one.
  func records(after cursor: HubCursor, limit: Int) async throws(HubError) -> HubPage

  /// Returns true as soon as records after `cursor` exist, or false once `timeout` has passed (or
  /// the task is cancelled) without any.
  func waitForChanges(after cursor: HubCursor, timeout: Duration) async throws(HubError) -> Bool

  /// Tells the hub that the blob `hash` arrived failing its check, or was missing.
  ///
  /// The hub checks its own copy itself, so no caller can destroy a good blob: a damaged copy is
  /// dropped and the hash listed in ``wantedBlobs()``, as is a missing blob that a record names.
  func reportDamagedBlob(hash: [UInt8]) async throws(HubError) -> BlobCondition

  /// Hashes of blobs the hub wants a device to put again (see ``reportDamagedBlob(hash:)``); a
  /// put whose bytes hash to the key ends the want. Cheap enough to ask at every sync round.
  func wantedBlobs() async throws(HubError) -> [[UInt8]]
  /// The library's retention setting as stored (DocumentModel's `RetentionPolicy.serialized`);
  /// nil when none was set, which means the default.
  func retention() async throws(HubError) -> String?

  /// Stores the library's retention setting, for every device.
  func setRetention(_ serialized: String) async throws(HubError)

  /// Lets go of the content of the records with these ids, which retention released: the
  /// records stop naming their blobs, and the blobs that no record names any more go. The
  /// records themselves stay (they are small, and they carry the ancestry devices need to tell
  /// heads apart), so paging is not disturbed. Unknown ids are skipped. Each record released
  /// is listed in ``erasures(after:limit:)``, so that every device stops showing it.
  func prune(records ids: [[UInt8]]) async throws(HubError)

  /// Removes the records with these ids for good (`docsync forget`), and the blobs that no
  /// record names any more; lists each one removed in ``erasures(after:limit:)``, by id only,
  /// so that every device drops it too. Unknown ids are skipped. Paging records is not
  /// disturbed: a cursor past a removed record stays valid.
  func forget(records ids: [[UInt8]]) async throws(HubError)

  /// Up to `limit` erasures (released content, forgotten records) after `cursor`, in the order
  /// they happened, and the cursor to continue from. Paging from ``HubCursor/start`` sees every
  /// erasure exactly once, as ``records(after:limit:)`` sees records.
  func erasures(after cursor: HubCursor, limit: Int) async throws(HubError) -> ErasurePage
}

extension Hub {
  public func putSmallBlobs(_ blobs: [[UInt8]: [UInt8]]) async throws(HubError) -> Set<[UInt8]> {
    []
  }

  public var putsSmallBlobsTogether: Bool { false }

  public func adoptBlob(hash: [UInt8], file path: String, descriptor: Int32, checked: Bool)
    async throws(HubError) -> Bool
  {
    false
  }

  public func recoverBlob(hash: [UInt8]) async throws(HubError) -> Bool {
    try await hasBlob(hash: hash)
  }

  public func smallBlobs(hashes: [[UInt8]], sizeLimit: Int) async throws(HubError)
    -> [[UInt8]: [UInt8]]
  {
    [:]
  }
}

/// One opaque version record as a hub stores it.
public struct HubRecord: Sendable, Hashable, Codable {
  /// Identity of the record, unique in a hub; appending a known id again is a no-op.
  public var id: [UInt8]
  /// The encoded record; the hub never looks inside.
  public var payload: [UInt8]
  /// Hashes of the blobs the record names; each must be in the hub before the record.
  public var blobs: [[UInt8]]

  public init(id: [UInt8], payload: [UInt8], blobs: [[UInt8]] = []) {
    self.id = id
    self.payload = payload
    self.blobs = blobs
  }
}

/// A position in a hub's sequence of records, opaque to everyone but the hub that made it.
///
/// Its ``serialized`` form is stable, so a sync engine can persist it and resume later.
public struct HubCursor: Sendable, Hashable, Codable, CustomStringConvertible {
  /// The stable text form; hubs give it meaning, callers only store it.
  public let serialized: String

  public init(serialized: String) {
    self.serialized = serialized
  }

  /// Before the first record of any hub.
  public static let start = HubCursor(serialized: "")

  public var description: String { serialized.isEmpty ? "start" : serialized }

  // A single string rather than a keyed object, so that persisted cursors stay short and readable.
  public init(from decoder: any Decoder) throws {
    serialized = try decoder.singleValueContainer().decode(String.self)
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(serialized)
  }
}

/// One page of records and the cursor that follows it.
public struct HubPage: Sendable, Hashable {
  /// Records in hub order.
  public var records: [HubRecord]
  /// Where the next page starts; equal to the cursor asked for when the page is empty.
  public var cursor: HubCursor

  public init(records: [HubRecord], cursor: HubCursor) {
    self.records = records
    self.cursor = cursor
  }
}

/// Why a hub operation failed.
public enum HubError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The hub cannot be reached now; retrying later may work.
  case unreachable(String)
  /// Bytes did not match their hash, or a stored record contradicts a new one.
  case integrity(String)
  /// A blob that was asked for, or that a record names, is not in the hub.
  case missingBlob([UInt8])
  /// The hub location cannot be used: not a database, a folder, an unknown kind.
  case invalidLocation(String)
  /// The caller's own file (the content it puts, the file a fetch fills) could not be read or
  /// written: a full disk or a failing one on the caller's side, with nothing wrong with the
  /// hub.
  case local(String)
  /// The hub has a format this docsync does not know and devices must: a newer docsync made or
  /// upgraded it. The reason says what the hub is at and what this docsync knows.
  case needsNewerDocsync(String)
  /// Anything else.
  case failed(String)

  public var description: String {
    switch self {
    case .unreachable(let reason): "hub unreachable: \(reason)"
    case .integrity(let reason): "integrity check failed: \(reason)"
    case .missingBlob(let hash): "the hub has no blob \(hexString(hash))"
    case .invalidLocation(let reason): "invalid hub location: \(reason)"
    case .local(let reason): reason
    case .needsNewerDocsync(let reason):
      "this hub needs a newer docsync (\(reason)): upgrade docsync on this device"
    case .failed(let reason): "hub operation failed: \(reason)"
    }
  }
}

extension Hub {
  /// A hub that always checks what it stores.
  public func putBlob(hash: [UInt8], from fileDescriptor: Int32, checked: Bool)
    async throws(HubError)
  {
    try await putBlob(hash: hash, from: fileDescriptor)
  }
}

/// The hash by which hubs address blobs: SHA-256 of the bytes.
public enum HubHash {
  /// The SHA-256 of `bytes`, as the `hash` argument of ``Hub/putBlob(hash:from:)`` expects it.
  public static func sha256(_ bytes: some Sequence<UInt8>) -> [UInt8] {
    var hasher = SHA256()
    hasher.update(data: Array(bytes))
    return Array(hasher.finalize())
  }
}

/// Lower-case hexadecimal of `bytes`, as hashes are written in messages and on the wire.
public func hexString(_ bytes: [UInt8]) -> String {
  let digits = Array("0123456789abcdef")
  var text = ""
  text.reserveCapacity(bytes.count * 2)
  for byte in bytes {
    text.append(digits[Int(byte >> 4)])
    text.append(digits[Int(byte & 0x0f)])
  }
  return text
}
