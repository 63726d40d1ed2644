import ContentModel
import DocumentModel
import Foundation
import Hub
import PostgresNIO

// `docsync hub init` cuts the blobs records name into chunks, account by account, batch by
// batch (Migrations/v0015_blob_twins.sql). Each blob: its chunks read, cut as a device cuts
// content (BlobCutter), the objects put through the account's own functions, then one short
// transaction that checks the blob is as read and exchanges it for its twin. A run stopped
// anywhere leaves every version readable (as its blob, or as its twin) and the next run goes
// on; objects put for a blob whose twin never came are an upload without a record, swept
// after their grace.

extension HubAdministration {
  /// Converts every blob that records name into its twin, in every account; hands the totals
  /// so far to `progress` after each batch. `stop` lets a test stop it as a crash would.
  @discardableResult
  public func convertBlobs(
    batchSize: Int = 16, stop: TwinStop = TwinStop(),
    progress: @escaping @Sendable (TwinBatch) -> Void = { _ in }
  ) async throws(HubError) -> TwinBatch {
    try await withConnection { connection in
      guard try await Migrations.appliedVersion(connection) >= Migrations.blobTwins else {
        throw HubError.invalidLocation(
          "the hub's schema is before step \(Migrations.blobTwins): run docsync hub init first")
      }
      let rows = try await connection.rows(
        """
        SELECT rolname::text FROM pg_roles
        WHERE rolname LIKE 'docsync\\_account\\_%' AND NOT rolcanlogin ORDER BY rolname
        """)
      var total = TwinBatch(next: nil)
      for account in try rows.decode(String.self) {
        let objects = AccountObjects(connection: connection, account: account)
        var after: [UInt8] = []
        while true {
          let batch = try await Self.convert(
            objects, after: after, limit: batchSize, stop: stop)
          total.converted += batch.converted
          total.bytes += batch.bytes
          total.damaged += batch.damaged
          total.skipped += batch.skipped
          progress(total)
          guard let next = batch.next else { break }
          after = next
        }
      }
      return total
    }
  }

  /// One batch of an account's blobs after `after`.
  static func convert(
    _ objects: AccountObjects, after: [UInt8], limit: Int, stop: TwinStop
  ) async throws(HubError) -> TwinBatch {
    typealias Candidate = (hash: [UInt8], size: Int64, upload: UUID, twin: ContentRoot?)
    let candidates = try await objects.acting { connection -> [Candidate] in
      let rows = try await connection.rows(
        """
        SELECT hash, size, upload, reference
        FROM docsync.twin_candidates(\(ByteBuffer(bytes: after)), \(Int32(limit)))
        """)
      var found: [Candidate] = []
      for (hash, size, upload, reference) in try rows.decode(
        (ByteBuffer, Int64, UUID, ByteBuffer?).self)
      {
        found.append(
          (
            Array(hash.readableBytesView), size, upload,
            reference.flatMap { try? ContentRoot(decoding: Array($0.readableBytesView)) }
          ))
      }
      return found
    }
    var batch = TwinBatch(next: candidates.count == limit ? candidates.last?.hash : nil)
    for blob in candidates {
      try stop.reached(.beforeCutting)
      let root: ContentRoot
      if let twin = blob.twin {
        // Put again by a device since its conversion: the twin stands, the blob goes.
        root = twin
      } else {
        var cutter = BlobCutter(store: objects)
        var index: Int32 = 0
        while true {
          let chunkIndex = index
          let upload = blob.upload
          let chunk = try await objects.acting { connection -> [UInt8]? in
            let rows = try await connection.rows(
              "SELECT data FROM docsync.chunks WHERE upload = \(upload) AND index = \(chunkIndex)")
            for data in try rows.decode(ByteBuffer.self) { return Array(data.readableBytesView) }
            return nil
          }
          guard let chunk else { break }
          try await cutter.append(chunk)
          index += 1
        }
        let cut = try await cutter.finish()
        guard cut.digest == blob.hash, cut.size == blob.size else {
          // Damaged here: the damage path drops it and wants it from a device.
          let hash = blob.hash
          _ = try? await objects.acting { connection in
            try await connection.run(
              "SELECT docsync.report_damaged_blob(\(ByteBuffer(bytes: hash)))")
          }
          batch.damaged += 1
          continue
        }
        root = cut.root
      }
      try stop.reached(.beforeRecording)
      let (hash, upload) = (blob.hash, blob.upload)
      let installed = try await objects.acting { connection -> Bool in
        let rows = try await connection.rows(
          """
          SELECT docsync.install_twin(\(ByteBuffer(bytes: hash)), \(upload),
            \(ByteBuffer(bytes: root.id.bytes)), \(ByteBuffer(bytes: root.encoded())))
          """)
        for done in try rows.decode(Bool.self) { return done }
        return false
      }
      if installed {
        batch.converted += 1
        batch.bytes += blob.size
      } else {
        batch.skipped += 1
      }
    }
    return batch
  }
}
