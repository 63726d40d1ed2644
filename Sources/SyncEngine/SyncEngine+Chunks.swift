import ContentModel
import Crypto
import DocumentModel
import Glibc
import Hub
import LocalStore

extension SyncEngine {
  // MARK: - Content as chunks
  //
  // A file version whose record names a chunk root moves as objects (docs/content-layer.md):
  // the push puts only the chunks and nodes the hub lacks, and a device that receives it copies
  // the chunks it shares with content it holds (the version it follows, a copy's original) and
  // fetches the rest. The device still keeps each content whole (a blob or a clean working
  // file); its chunk list is kept beside it in the state database, as a cache that cutting the
  // content again rebuilds.

  /// The hub's object store, when it has one; a hub without one moves whole blobs.
  var objectStore: (any ObjectStore)? { contentInChunks ? hub as? any ObjectStore : nil }

  /// The most bytes of objects one `putObjects` or `objects` call carries.
  static let objectBatchBytes = 8 << 20
  /// The most ids one object call names.
  static let objectBatchCount = 1024

  /// Keeps the chunk list of content this device holds, for the versions made from it.
  func keepChunkList(_ list: ChunkList, of hash: ContentHash, recorded: Bool = false) {
    keepChunkLists([(hash, list)], recorded: recorded)
  }

  /// Keeps several chunk lists in one commit. `recorded`: lists cut as content was recorded,
  /// which leave a list kept in another id scheme in place (``LocalStore/storeChunkLists(_:keepingOtherSchemes:)``).
  func keepChunkLists(_ lists: [(ContentHash, ChunkList)], recorded: Bool = false) {
    guard objectStore != nil, !lists.isEmpty else { return }
    do {
      try store.storeChunkLists(
        lists.map { ($0.0.bytes, $0.1.root.encoded(), $0.1.encodedEntries()) },
        keepingOtherSchemes: recorded)
    } catch {
      logger.warning("cannot keep the chunk lists of \(lists.count) content(s): \(error)")
    }
  }

  /// The kept chunk list of `hash`, if there is one and it is whole.
  func storedChunkList(_ hash: ContentHash) -> ChunkList? {
    guard let row = try? store.chunkList(hash: hash.bytes) else { return nil }
    return ChunkList(root: row.root, entries: row.entries)
  }

  /// The chunk root a new version of content `hash` (of `size` bytes) names: that of its kept
  /// chunk list, when the hub stores objects. Only a list this device made or checked counts:
  /// a root copied from another device's record could name other bytes.
  func chunkRoot(for hash: ContentHash, size: UInt64) -> ContentRoot? {
    guard objectStore != nil, let list = storedChunkList(hash), list.root.size == size else {
      return nil
    }
    return list.root
  }

  /// The chunk list of content this device holds: kept, or cut again from the content and
  /// checked against `hash` (then kept). Reads a file: never under the lock.
  func chunkList(of hash: ContentHash, preferring path: DocumentPath? = nil) -> ChunkList? {
    if let list = storedChunkList(hash) { return list }
    guard let file = openContent(hash, preferring: path),
      let list = blobs.chunkList(of: file, expecting: hash)
    else { return nil }
    keepChunkList(list, of: hash)
    return list
  }

  // MARK: Upload

  /// Puts the chunks and nodes of the batch's chunked versions that the hub lacks, children
  /// before parents; returns the versions whose content the hub has now. A version whose
  /// content this device cannot read as its record names it is left out (the caller holds it
  /// back, as it does a blob it cannot provide).
  func uploadChunks(of batch: [VersionRecord]) async throws(SyncError) -> Set<VersionID> {
    guard let objects = objectStore else { return [] }
    struct Content {
      var list: ChunkList
      var path: DocumentPath
      var versions: [VersionID]
    }
    var contents: [ContentHash: Content] = [:]
    var order: [ContentHash] = []
    for record in batch {
      guard let root = record.chunks, case .file(let hash, _, _) = record.content else { continue }
      if contents[hash] != nil {
        if contents[hash]!.list.root == root { contents[hash]!.versions.append(record.id) }
        continue
      }
      guard let list = chunkList(of: hash, preferring: record.path), list.root == root
      else {
        logger.error("cannot read the content of \(record.path) as its version names it")
        continue
      }
      contents[hash] = Content(list: list, path: record.path, versions: [record.id])
      order.append(hash)
    }
    guard !order.isEmpty else { return [] }
    // Every distinct object, asked about once.
    var trees: [ContentHash: ManifestTree] = [:]
    var asked: [[UInt8]] = []
    var seen: Set<ObjectID> = []
    for hash in order {
      let tree = contents[hash]!.list.tree
      trees[hash] = tree
      for entry in contents[hash]!.list.entries where seen.insert(entry.id).inserted {
        asked.append(entry.id.bytes)
      }
      for node in tree.nodes where seen.insert(node.id).inserted { asked.append(node.id.bytes) }
    }
    var missing: Set<[UInt8]> = []
    do {
      for start in stride(from: 0, to: asked.count, by: Self.objectBatchCount) {
        let part = Array(asked[start..<min(start + Self.objectBatchCount, asked.count)])
        missing.formUnion(try await objects.missingObjects(part))
      }
    } catch {
      throw SyncError(error)
    }
    let compressor = ObjectCompressor()
    var pending: [HubObject] = []
    var pendingBytes = 0
    var sentBytes: UInt64 = 0
    // One batch goes to the hub while the next is read, checked and framed: done in turn, the
    // device's hashing and the hub's writing each waited for the other, and a 1 GiB push used
    // one core of two.
    var inFlight: (put: Task<Result<Void, SyncError>, Never>, ids: [[UInt8]], bytes: Int)?
    func settle() async throws(SyncError) {
      guard let current = inFlight else { return }
      inFlight = nil
      if case .failure(let error) = await current.put.value { throw error }
      for id in current.ids { missing.remove(id) }
      sentBytes += UInt64(current.bytes)
    }
    func flush() async throws(SyncError) {
      guard !pending.isEmpty else { return }
      try await settle()
      let batch = pending
      let put = onTransferThread { () async throws(SyncError) in
        do throws(HubError) {
          try await objects.putObjects(batch)
        } catch {
          throw SyncError(error)
        }
      }
      inFlight = (put, batch.map(\.id), pendingBytes)
      pending.removeAll(keepingCapacity: true)
      pendingBytes = 0
    }
    func add(_ object: HubObject) async throws(SyncError) {
      pending.append(object)
      pendingBytes += object.data.count
      if pendingBytes >= Self.objectBatchBytes || pending.count >= Self.objectBatchCount {
        try await flush()
      }
    }
    var failed: Set<ContentHash> = []
    var queued: Set<[UInt8]> = []
    for hash in order {
      let content = contents[hash]!
      let needed = content.list.placed.filter {
        missing.contains($0.entry.id.bytes) && !queued.contains($0.entry.id.bytes)
      }
      guard !needed.isEmpty else { continue }
      if try await adoptInPlace(hash, content.list, needed, into: objects, compressor: compressor) {
        for (entry, _) in needed {
          queued.insert(entry.id.bytes)
          missing.remove(entry.id.bytes)
          sentBytes += entry.size + 1
        }
        continue
      }
      // The blob first; when it no longer holds the content (damaged here), a working file
      // that still does makes it again, as for a blob's upload.
      var remaining = needed[...]
      var unreadable = false
      for attempt in 0..<2 where !remaining.isEmpty {
        if attempt == 1 && !restoreBlob(hash, replacing: unreadable) { break }
        guard let file = openContent(hash, preferring: content.path, anywhere: true) else {
          continue
        }
        // A blob this run wrote from bytes it hashed, chunk ids included, and unchanged since
        // is not hashed again chunk by chunk, as a blob's upload is not: a 1 GiB push spent
        // an eighth of its processor time on this second BLAKE2b pass.
        let checked = attempt == 0 && blobs.isChecked(file, hash)
        while let (entry, offset) = remaining.first {
          // The same chunk twice in one file (a run of zeros) is put once.
          if queued.contains(entry.id.bytes) {
            remaining = remaining.dropFirst()
            continue
          }
          let read = file.chunk(entry, at: offset, hasher: content.list.hasher, checked: checked)
          guard case .bytes(let bytes) = read else {
            unreadable = read == .unreadable
            if read == .otherBytes && blobs.isBlobFile(file, hash) {
              // Never upload content that no longer matches its name: the blob goes, and a
              // working file that still holds the content makes it again.
              logger.error(
                "local content \(hash.hex) does not match its hash and is not uploaded")
              blobs.remove(hash)
            }
            break
          }
          queued.insert(entry.id.bytes)
          try await add(HubObject(id: entry.id.bytes, data: compressor.frame(bytes)))
          remaining = remaining.dropFirst()
        }
      }
      guard remaining.isEmpty else {
        failed.insert(hash)
        if unreadable {
          // It may read again: kept, and tried at the next start.
          logger.error("the content of \(content.path) cannot be read here; not uploaded")
          continue
        }
        logger.error("the content of \(content.path) is damaged or changed here; not uploaded")
        // Fetched again unless the hub lacks it too (then it stays missing until restored).
        withLock { noteMissing(hash, .damagedHere) }
        continue
      }
    }
    // Chunks of a content that failed stay out of nodes: its nodes would name what is absent.
    // Every chunk is in before a node that names it is put.
    try await flush()
    try await settle()
    for hash in order where !failed.contains(hash) {
      for node in trees[hash]!.nodes
      where missing.contains(node.id.bytes) && queued.insert(node.id.bytes).inserted {
        try await add(
          HubObject(
            id: node.id.bytes, data: compressor.frame(node.encoded),
            references: node.node.entries.map(\.id.bytes)))
      }
    }
    try await flush()
    try await settle()
    withLock { contentState.sent(sentBytes) }
    return Set(order.filter { !failed.contains($0) }.flatMap { contents[$0]!.versions })
  }

  /// The smallest content handed to the hub in place: below it a copy costs little, and the
  /// hub would keep many small packs.
  static let adoptedContentMinimum: UInt64 = 8 << 20

  /// Hands the chunks `needed` of content `hash` to the hub in the blob's own file, when the
  /// hub can take it in place (``ObjectStore/adoptChunks(file:descriptor:chunks:framePrefix:)``)
  /// and that beats copying: the content is large, the hub lacks most of it, and its chunks
  /// do not compress (sampled), so that they would be stored raw anyway. The embedded hub then
  /// writes none of its bytes again: a 1 GiB push wrote every byte twice (the blob, then a
  /// pack). True when the hub has them now.
  func adoptInPlace(
    _ hash: ContentHash, _ list: ChunkList, _ needed: [(entry: ManifestEntry, offset: UInt64)],
    into objects: any ObjectStore, compressor: ObjectCompressor
  ) async throws(SyncError) -> Bool {
    let size = list.root.size
    let neededBytes = needed.reduce(UInt64(0)) { $0 + $1.entry.size }
    // Only a blob this run wrote from hashed bytes: its chunks are what their ids say.
    guard size >= Self.adoptedContentMinimum, neededBytes * 4 >= size * 3,
      let file = blobs.openBlob(hash), let path = file.blobPath, blobs.isChecked(file, hash)
    else { return false }
    let placed = list.placed
    let samples = Swift.min(8, placed.count)
    var compressible = 0
    for index in 0..<samples {
      let (entry, offset) = placed[index * placed.count / samples]
      guard
        case .bytes(let bytes) = file.chunk(entry, at: offset, hasher: list.hasher, checked: true)
      else { return false }
      if compressor.frame(bytes).first != ObjectFrame.raw.rawValue { compressible += 1 }
    }
    guard compressible <= samples / 8 else { return false }
    // The checks made as the blob was written spare the hub reading it back from the disk.
    let frames = blobs.frameChecks(of: file, hash)
    defer { blobs.forgetFrameChecks(hash) }
    let chunks = needed.map { entry, offset in
      let frame = frames[Int64(offset)]
      return AdoptedChunk(
        id: entry.id.bytes, offset: Int64(offset), length: Int(entry.size),
        frameHash: frame?.length == Int(entry.size) ? frame?.hash : nil)
    }
    do {
      return try await objects.adoptChunks(
        file: path, descriptor: file.descriptor, chunks: chunks, framePrefix: ContentStore.rawFrame)
    } catch {
      throw SyncError(error)
    }
  }

  /// The bytes of the chunk `entry` (named by `hasher`) at `offset` of an open content, if
  /// they are still that chunk.
  func readChunk(
    _ file: ContentFile, _ entry: ManifestEntry, at offset: UInt64, hasher: ObjectHasher
  ) -> [UInt8]? {
    if case .bytes(let bytes) = file.chunk(entry, at: offset, hasher: hasher) { return bytes }
    return nil
  }

  // MARK: Download

  /// Content this device holds that a version of `hash` likely shares chunks with: the same
  /// content at another path (a copy), what its paths show now, and the versions it follows
  /// or was renamed from. At most four, each with a path whose clean working file may hold it.
  /// Called with the lock held.
  func chunkSources(for hash: ContentHash) -> [(hash: ContentHash, path: DocumentPath)] {
    var sources: [(hash: ContentHash, path: DocumentPath)] = []
    func consider(_ candidate: ContentHash?, _ path: DocumentPath) {
      guard let candidate, sources.count < 4, !sources.contains(where: { $0.hash == candidate }),
        holdsContent(candidate, preferring: path)
      else { return }
      sources.append((candidate, path))
    }
    for id in library.known.versions(withContent: hash).prefix(8) {
      guard let record = library.known[id] else { continue }
      consider(hash, record.path)
      if let shownID = library.shown[record.path].map({ VersionID(digest($0.versionID)) }) {
        consider(library.known[shownID]?.content.blobHash, record.path)
      }
      for parent in record.parents {
        consider(library.known[parent]?.content.blobHash, record.path)
      }
      if let origin = record.origin {
        consider(library.known[origin.version]?.content.blobHash, origin.path)
      }
    }
    return sources
  }

  /// Fetches the content `hash` that a record names as chunks, into the blob store: chunks it
  /// shares with content this device holds are copied from there, the rest come from the hub;
  /// each is checked against its id, and the whole against `hash`, before it is installed.
  /// `extraSources` are versions not yet known (a page being pulled). Returns nil when the
  /// content is here, else why not. `durable` as for
  /// ``ContentStore/install(_:as:durable:)``.
  func fetchChunked(
    _ hash: ContentHash, root: ContentRoot, extraSources: [VersionRecord] = [],
    durable: Bool = true
  ) async throws(SyncError) -> (reason: ContentWait, awaited: [UInt8]?)? {
    guard let objects = objectStore else { return (.missingOnHub, nil) }
    let candidates = withLock { () -> [(hash: ContentHash, path: DocumentPath)] in
      var found = chunkSources(for: hash)
      for record in extraSources where found.count < 4 {
        for parent in record.parents {
          if let content = library.known[parent]?.content.blobHash,
            !found.contains(where: { $0.hash == content }),
            holdsContent(content, preferring: record.path)
          {
            found.append((content, record.path))
          }
        }
        if let shownID = library.shown[record.path].map({ VersionID(digest($0.versionID)) }),
          let content = library.known[shownID]?.content.blobHash,
          !found.contains(where: { $0.hash == content })
        {
          found.append((content, record.path))
        }
      }
      return found
    }
    // What this device holds, by object id: chunks (source, offset) and nodes.
    var sources: [(file: ContentFile, hash: ContentHash)] = []
    var localChunks: [ObjectID: (source: Int, offset: UInt64)] = [:]
    var localNodes: [ObjectID: ManifestNode] = [:]
    for candidate in candidates {
      guard let list = chunkList(of: candidate.hash, preferring: candidate.path),
        let file = openContent(candidate.hash, preferring: candidate.path)
      else { continue }
      sources.append((file, candidate.hash))
      for (entry, offset) in list.placed where localChunks[entry.id] == nil {
        localChunks[entry.id] = (sources.count - 1, offset)
      }
      for node in list.tree.nodes { localNodes[node.id] = node.node }
    }
    let verifier = ObjectVerifier(hasher: ChunkList.hasher(root.scheme))
    var receivedBytes: UInt64 = 0
    func fetch(_ ids: [ObjectID]) async throws(SyncError) -> [ObjectID: [UInt8]] {
      let (result, bytes) = try await Self.fetchObjects(ids, from: objects)
      receivedBytes += bytes
      return result
    }
    // The tree, level by level: nodes this device has are not fetched.
    var level = [ManifestEntry(id: root.object, size: root.size)]
    var height = root.height
    while height > 0 {
      let fetched = try await fetch(level.map(\.id).filter { localNodes[$0]?.height != height })
      var next: [ManifestEntry] = []
      for entry in level {
        if let node = localNodes[entry.id], node.height == height, node.size == entry.size {
          next += node.entries
          continue
        }
        guard let framed = fetched[entry.id] else {
          logger.error("the hub lacks part of the content \(hash.hex) (node \(entry.id.hex))")
          return try await absence(of: entry.id)
        }
        do throws(ManifestError) {
          next += try verifier.node(framed, for: entry, height: height).entries
        } catch {
          logger.error("refused part of the content \(hash.hex) from the hub: \(error)")
          return (.damagedOnHub, nil)
        }
      }
      level = next
      height -= 1
    }
    let blob: IncomingBlob
    do throws(ContentError) {
      blob = try blobs.incoming()
    } catch {
      throw SyncError(error)
    }
    var sha = SHA256()
    var offset: UInt64 = 0
    var copiedBytes: UInt64 = 0
    // Windows of chunks: what is here is read, the rest is asked for in one call.
    var windows: [Range<Int>] = []
    var start = 0
    while start < level.count {
      var end = start
      var windowBytes: UInt64 = 0
      while end < level.count && (end == start || windowBytes < UInt64(Self.objectBatchBytes))
        && end - start < Self.objectBatchCount
      {
        windowBytes += level[end].size
        end += 1
      }
      windows.append(start..<end)
      start = end
    }
    // The window's chunks held here, and a fetch of the rest that runs on the engine's
    // transfer thread while the window before is checked and written.
    typealias Fetched = Result<([ObjectID: [UInt8]], UInt64), SyncError>
    func begin(_ window: Range<Int>) -> (plain: [ObjectID: [UInt8]], fetch: Task<Fetched, Never>) {
      var plain: [ObjectID: [UInt8]] = [:]
      var wanted: [ObjectID] = []
      for entry in level[window] where plain[entry.id] == nil {
        if let (source, at) = localChunks[entry.id],
          let bytes = readChunk(sources[source].file, entry, at: at, hasher: verifier.hasher)
        {
          plain[entry.id] = bytes
          copiedBytes += entry.size
        } else {
          wanted.append(entry.id)
        }
      }
      let asked = wanted
      let fetch = onTransferThread { () async throws(SyncError) in
        try await Self.fetchObjects(asked, from: objects)
      }
      return (plain, fetch)
    }
    var next = windows.first.map(begin)
    for (index, window) in windows.enumerated() {
      guard let current = next else { break }
      var plain = current.plain
      let fetched: [ObjectID: [UInt8]]
      switch await current.fetch.value {
      case .success(let (got, bytes)):
        fetched = got
        receivedBytes += bytes
      case .failure(let error):
        throw error
      }
      next = index + 1 < windows.count ? begin(windows[index + 1]) : nil
      for entry in level[window] where plain[entry.id] == nil {
        guard let framed = fetched[entry.id] else {
          logger.error("the hub lacks part of the content \(hash.hex) (chunk \(entry.id.hex))")
          return try await absence(of: entry.id)
        }
        do throws(ManifestError) {
          plain[entry.id] = try verifier.chunkCheckedLater(framed, for: entry)
        } catch {
          logger.error("refused part of the content \(hash.hex) from the hub: \(error)")
          return (.damagedOnHub, nil)
        }
      }
      for entry in level[window] {
        let bytes = plain[entry.id]!
        sha.update(data: bytes)
        do throws(ContentError) {
          try blob.write(bytes, at: offset)
        } catch {
          throw SyncError(error)
        }
        offset += entry.size
      }
    }
    withLock { contentState.received(receivedBytes) }
    guard sha.finalize().withUnsafeBytes({ Array($0) }) == hash.bytes else {
      // The ids were left for now (``ObjectVerifier/chunkCheckedLater(_:for:)``): which
      // objects lie is read back from what was written. When none does, the record itself
      // named chunks of other content.
      var placed: UInt64 = 0
      var lying: [String] = []
      for entry in level {
        if case .bytes = blob.chunk(entry, at: placed, hasher: verifier.hasher) {
        } else {
          lying.append(entry.id.hex)
        }
        placed += entry.size
      }
      if lying.isEmpty {
        logger.error("the chunks a version names for \(hash.hex) hold other content; refused")
      } else {
        logger.error(
          """
          refused part of the content \(hash.hex) from the hub: \(lying.count) chunk(s) do not \
          hash to their ids (\(lying.prefix(3).joined(separator: ", ")))
          """)
      }
      return (.damagedOnHub, nil)
    }
    do throws(ContentError) {
      try blobs.install(blob, as: hash, durable: durable)
    } catch {
      throw SyncError(error)
    }
    keepChunkList(ChunkList(entries: level, scheme: root.scheme), of: hash)
    if let file = blobs.openBlob(hash) { blobs.noteChecked(file, hash) }
    logger.debug(
      """
      fetched \(hash.hex) as \(level.count) chunk(s): \(copiedBytes) bytes from this device, \
      \(receivedBytes) bytes from the hub
      """)
    return nil
  }

  /// Starts `work` on the engine's transfer thread, to be awaited later: never on the shared
  /// pool, which may be blocked, nor on the loop's thread, which is busy with the next batch
  /// until it waits for this one.
  func onTransferThread<T: Sendable>(
    _ work: @escaping @Sendable () async throws(SyncError) -> T
  ) -> Task<Result<T, SyncError>, Never> {
    Task(executorPreference: transferExecutor) {
      do throws(SyncError) {
        return .success(try await work())
      } catch {
        return .failure(error)
      }
    }
  }

  /// The stored bytes of the objects among `ids` that the hub has, asked for in batches, and
  /// how many bytes came.
  static func fetchObjects(_ ids: [ObjectID], from objects: any ObjectStore)
    async throws(SyncError) -> ([ObjectID: [UInt8]], UInt64)
  {
    var result: [ObjectID: [UInt8]] = [:]
    var bytes: UInt64 = 0
    var unique: [ObjectID] = []
    var seen: Set<ObjectID> = []
    for id in ids where seen.insert(id).inserted { unique.append(id) }
    for start in stride(from: 0, to: unique.count, by: objectBatchCount) {
      let part = unique[start..<min(start + objectBatchCount, unique.count)]
      let got: [[UInt8]: [UInt8]]
      do {
        got = try await objects.objects(part.map(\.bytes))
      } catch {
        throw SyncError(error)
      }
      for id in part {
        if let data = got[id.bytes] {
          result[id] = data
          bytes += UInt64(data.count)
        }
      }
    }
    return (result, bytes)
  }

  /// Why the hub lacks object `id`: it found its copy damaged and wants it put again, or it
  /// never had it (a device that has the content puts it when it syncs).
  func absence(of id: ObjectID) async throws(SyncError) -> (reason: ContentWait, awaited: [UInt8]?)
  {
    guard let objects = objectStore else { return (.missingOnHub, nil) }
    do {
      if try await objects.wantedObjects().contains(id.bytes) { return (.damagedOnHub, id.bytes) }
    } catch {
      throw SyncError(error)
    }
    return (.missingOnHub, nil)
  }

  /// Fetches small content of one chunk each together, into ``ContentState/fetched``, as
  /// ``fetchSmallContent(_:)`` does for blobs; returns the hashes that arrived.
  func fetchSmallChunked(_ items: [(hash: ContentHash, root: ContentRoot)]) async throws(SyncError)
    -> Set<ContentHash>
  {
    guard let objects = objectStore else { return [] }
    // Each content is checked by its own record's id scheme.
    var verifiers: [ObjectIDScheme: ObjectVerifier] = [:]
    for scheme in ObjectIDScheme.allCases {
      verifiers[scheme] = ObjectVerifier(hasher: ChunkList.hasher(scheme))
    }
    var arrived: Set<ContentHash> = []
    var receivedBytes: UInt64 = 0
    for start in stride(from: 0, to: items.count, by: 512) {
      let part = items[start..<min(start + 512, items.count)]
      let got: [[UInt8]: [UInt8]]
      do {
        got = try await objects.objects(part.map { $0.root.id.bytes })
      } catch {
        throw SyncError(error)
      }
      var plain: [ContentHash: [UInt8]] = [:]
      for item in part {
        guard let framed = got[item.root.id.bytes] else { continue }
        receivedBytes += UInt64(framed.count)
        let entry = ManifestEntry(id: item.root.object, size: item.root.size)
        guard let bytes = try? verifiers[item.root.scheme]!.chunk(framed, for: entry),
          ContentHash(of: bytes) == item.hash
        else { continue }
        plain[item.hash] = bytes
      }
      withLock {
        for (hash, bytes) in plain {
          contentState.hold(bytes, for: hash)
          arrived.insert(hash)
        }
      }
      // Kept, so that this device can put them again should the hub lose them.
      let lists = part.filter { plain[$0.hash] != nil }.map { item in
        let list = ChunkList(
          entries: [ManifestEntry(id: item.root.object, size: item.root.size)],
          scheme: item.root.scheme)
        return (item.hash.bytes, list.root.encoded(), list.encodedEntries())
      }
      do {
        try store.storeChunkLists(lists)
      } catch {
        logger.warning("cannot keep the chunk lists of fetched content: \(error)")
      }
    }
    withLock { contentState.received(receivedBytes) }
    return arrived
  }

  /// The roots of the hub's twins of the blobs among `hashes` (see ``BlobTwins``): content
  /// recorded before chunks, or by a merge, that the hub has cut into objects. Empty when this
  /// engine moves blobs whole or the hub keeps no twins.
  func twinRoots(_ hashes: [ContentHash]) async throws(SyncError) -> [ContentHash: ContentRoot] {
    guard !hashes.isEmpty, objectStore != nil, let twins = hub as? any BlobTwins else { return [:] }
    var roots: [ContentHash: ContentRoot] = [:]
    for start in stride(from: 0, to: hashes.count, by: 512) {
      let part = hashes[start..<min(start + 512, hashes.count)]
      do {
        let found = try await twins.blobRoots(part.map(\.bytes))
        for hash in part { if let root = found[hash.bytes] { roots[hash] = root } }
      } catch {
        throw SyncError(error)
      }
    }
    return roots
  }

  /// The content hash a blob's file is named by (64 lower-case hex digits), nil for another
  /// name.
  static func contentHash(hex: String) -> ContentHash? {
    let digits = Array(hex.utf8)
    guard digits.count == 64 else { return nil }
    func value(_ digit: UInt8) -> UInt8? {
      switch digit {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
      default: nil
      }
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(32)
    for index in stride(from: 0, to: 64, by: 2) {
      guard let high = value(digits[index]), let low = value(digits[index + 1]) else {
        return nil
      }
      bytes.append(high << 4 | low)
    }
    return Digest256(bytes: bytes).map { ContentHash($0) }
  }

  /// The chunk root under which a known version names content `hash`, if any does. Called with
  /// the lock held.
  func knownChunkRoot(of hash: ContentHash) -> ContentRoot? {
    for id in library.known.versions(withContent: hash) {
      if let root = library.known[id]?.chunks { return root }
    }
    return nil
  }

  // MARK: Repair

  /// Puts again the objects the hub found damaged or lost, from the content this device
  /// holds: a damaged chunk on the hub is mended with nobody acting.
  /// Returns the ids the hub wants.
  func serveWantedObjects() async throws(SyncError) -> Set<[UInt8]> {
    guard let objects = objectStore else { return [] }
    var wanted: Set<ObjectID>
    do {
      wanted = Set(try await objects.wantedObjects().compactMap { ObjectID(bytes: $0) })
    } catch {
      throw SyncError(error)
    }
    let listed = Set(wanted.map(\.bytes))
    guard !wanted.isEmpty else { return listed }
    // Where each wanted object is: a chunk of held content, or a node of its tree. A walk of
    // every kept list, only when the hub wants something (it found damage).
    var hashes: [ContentHash] = []
    try? store.eachChunkList { hash, _ in
      if let digest = Digest256(bytes: hash) { hashes.append(ContentHash(digest)) }
      return true
    }
    let compressor = ObjectCompressor()
    var chunks: [HubObject] = []
    var nodes: [HubObject] = []
    func serve(_ hash: ContentHash, _ list: ChunkList) {
      for node in list.tree.nodes where wanted.remove(node.id) != nil {
        nodes.append(
          HubObject(
            id: node.id.bytes, data: compressor.frame(node.encoded),
            references: node.node.entries.map(\.id.bytes)))
      }
      let needed = list.placed.filter { wanted.contains($0.entry.id) }
      guard !needed.isEmpty, let file = openContent(hash, anywhere: true) else { return }
      for (entry, offset) in needed {
        if let bytes = readChunk(file, entry, at: offset, hasher: list.hasher) {
          chunks.append(HubObject(id: entry.id.bytes, data: compressor.frame(bytes)))
          wanted.remove(entry.id)
        }
      }
    }
    for hash in hashes where !wanted.isEmpty {
      guard let list = storedChunkList(hash) else { continue }
      serve(hash, list)
    }
    let unsearched = withLock {
      wanted.map(\.bytes).filter { !contentState.wantedLookedForInTwins.contains($0) }
    }
    if !unsearched.isEmpty {
      // Content fetched whole before the hub cut its blob into a twin has no kept list: the
      // content here that has a twin is cut (its list kept, so once only), in case it holds
      // what the hub lost. Each wanted id once: the hub asks at every round.
      withLock { contentState.wantedLookedForInTwins.formUnion(unsearched) }
      let kept = Set(hashes)
      var held: [ContentHash: DocumentPath?] = [:]
      // What the paths show (most often held by their working files alone), read under the
      // lock from memory; whether this device holds it is asked outside, by `chunkList`.
      withLock {
        for (path, record) in library.shown {
          let id = VersionID(digest(record.versionID))
          if let hash = library.known[id]?.content.blobHash { held[hash] = path }
        }
      }
      for blob in blobs.storedBlobs() {
        if let hash = Self.contentHash(hex: blob.hex), held[hash] == nil { held[hash] = .some(nil) }
      }
      for hash in kept { held[hash] = nil }
      for hash in try await twinRoots(Array(held.keys)).keys.sorted(by: { $0.hex < $1.hex })
      where !wanted.isEmpty {
        guard let list = chunkList(of: hash, preferring: held[hash] ?? nil) else { continue }
        serve(hash, list)
      }
    }
    // Chunks before the nodes that name them.
    let put = chunks + nodes
    do {
      if !put.isEmpty {
        try await objects.putObjects(put)
        logger.info("put \(put.count) object(s) the hub had lost again")
      }
    } catch {
      throw SyncError(error)
    }
    return listed
  }
}
