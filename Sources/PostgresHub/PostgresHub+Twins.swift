import ContentModel
import DocumentModel
import Hub
import PostgresNIO

// Blobs' twins on PostgreSQL (Migrations/v0015_blob_twins.sql): `docsync hub init` makes them
// (HubAdministration+Twins.swift); devices only read them, through docsync.blob_roots, which
// filters by their account.
extension PostgresHub: BlobTwins {
  public func blobRoots(_ hashes: [[UInt8]]) async throws(HubError) -> [[UInt8]: ContentRoot] {
    guard !hashes.isEmpty, await connections.schemaVersion >= Migrations.blobTwins else {
      return [:]
    }
    return try await withConnection { connection in
      let rows = try await connection.rows(
        """
        SELECT hash, reference FROM docsync.blob_roots(\(hashes.map { ByteBuffer(bytes: $0) })::bytea[])
        """)
      var roots: [[UInt8]: ContentRoot] = [:]
      for (hash, reference) in try rows.decode((ByteBuffer, ByteBuffer).self) {
        guard let root = try? ContentRoot(decoding: Array(reference.readableBytesView)) else {
          continue
        }
        roots[Array(hash.readableBytesView)] = root
      }
      return roots
    }
  }
}
