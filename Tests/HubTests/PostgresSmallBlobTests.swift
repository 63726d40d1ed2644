import Foundation
import Hub
import PostgresHub
import PostgresNIO
import Testing

/// The batched small-blob paths on PostgreSQL, where accounts share tables: row-level security
/// must hold for a batch as for one blob, and racing batches must leave nothing behind.
@Suite("PostgresHub small blobs", .enabled(if: PostgresTestCluster.isEnabled))
struct PostgresSmallBlobTests {
  /// A batch reads and writes only the caller's account: another account's blob under the same
  /// hash is neither returned nor touched, and raw batched inserts for it are refused.
  @Test func batchesReachOnlyTheCallersAccount() async throws {
    let (database, xDevice, yAccount, xURL, yURL) = try await PostgresTestCluster.twoAccounts()
    let yHub = try PostgresHub(location: yURL)
    let xHub = try PostgresHub(location: xURL)
    let secret = Array("y's secret".utf8)
    let other = pseudoRandomBytes(count: 4096, seed: 90)
    let yBatch = [HubHash.sha256(secret): secret, HubHash.sha256(other): other]
    #expect(try await yHub.putSmallBlobs(yBatch) == Set(yBatch.keys))
    try await yHub.append([makeRecord("y's record", blobs: Array(yBatch.keys))])

    #expect(try await xHub.smallBlobs(hashes: Array(yBatch.keys), sizeLimit: 65536).isEmpty)
    // X putting the same bytes stores a copy of its own, which Y never sees.
    let mine = [HubHash.sha256(secret): secret]
    #expect(try await xHub.putSmallBlobs(mine) == Set(mine.keys))
    #expect(try await xHub.smallBlobs(hashes: Array(yBatch.keys), sizeLimit: 65536) == mine)
    #expect(try await yHub.smallBlobs(hashes: Array(yBatch.keys), sizeLimit: 65536) == yBatch)

    let yRole = "docsync_account_\(yAccount)"
    try await PostgresTestCluster.withConnection(
      user: xDevice, password: "x-pw", database: database
    ) { x in
      let refused = [
        "INSERT INTO docsync.uploads (id, account, hash) "
          + "SELECT gen_random_uuid(), '\(yRole)', h FROM unnest(ARRAY['\\x01'::bytea, '\\x02']) AS t (h)",
        "INSERT INTO docsync.blobs (account, hash, size, upload) "
          + "SELECT '\(yRole)', hash, size, upload FROM docsync.blobs",
        "INSERT INTO docsync.chunks (account, upload, index, hash, data) "
          + "SELECT '\(yRole)', upload, 1, sha256('\\x00'), '\\x00' FROM docsync.blobs",
      ]
      for sql in refused {
        do {
          try await x.query(PostgresQuery(unsafeSQL: sql), logger: PostgresTestCluster.logger)
          Issue.record("accepted: \(sql)")
        } catch let error as PSQLError {
          #expect(error.serverInfo?[.sqlState] == "42501", "\(sql): \(String(reflecting: error))")
        }
      }
    }
    #expect(try await yHub.smallBlobs(hashes: Array(yBatch.keys), sizeLimit: 65536) == yBatch)
    try await PostgresTestCluster.withAdminConnection(database: database) { admin -> Void in
      let rows = try await admin.query(
        "SELECT count(*)::bigint FROM docsync.blobs WHERE hash = \(ByteBuffer(bytes: HubHash.sha256(secret)))",
        logger: PostgresTestCluster.logger)
      for try await count in rows.decode(Int64.self) { #expect(count == 2) }
    }
  }

  /// Devices racing to put the same small files end with one named blob each, and the uploads
  /// that lost the race are gone rather than left for the day-old sweep.
  @Test func racingBatchesLeaveOneBlobAndNoStrayUpload() async throws {
    let (url, database) = try await PostgresTestCluster.freshHubURL()
    let devices = try (0..<4).map { _ in try PostgresHub(location: url) }
    let blobs = Dictionary(
      uniqueKeysWithValues: (0..<300).map {
        pseudoRandomBytes(count: 50 + $0, seed: 900 + UInt64($0))
      }
      .map { (HubHash.sha256($0), $0) })
    try await withThrowingTaskGroup(of: Set<[UInt8]>.self) { group in
      for device in devices {
        group.addTask { try await device.putSmallBlobs(blobs) }
      }
      for try await stored in group { #expect(stored == Set(blobs.keys)) }
    }
    try await PostgresTestCluster.withAdminConnection(database: database) { admin -> Void in
      let rows = try await admin.query(
        """
        SELECT (SELECT count(*) FROM docsync.blobs)::bigint,
          (SELECT count(*) FROM docsync.uploads)::bigint,
          (SELECT count(*) FROM docsync.chunks)::bigint
        """, logger: PostgresTestCluster.logger)
      for try await (named, uploads, chunks) in rows.decode((Int64, Int64, Int64).self) {
        #expect(named == Int64(blobs.count))
        #expect(uploads == Int64(blobs.count))
        #expect(chunks == Int64(blobs.count))
      }
    }
    #expect(
      try await devices[0].smallBlobs(hashes: Array(blobs.keys), sizeLimit: 65536) == blobs)
  }
}
