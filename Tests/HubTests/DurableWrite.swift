import Foundation
import Hub
import MountHarness
import Testing

@testable import PostgresHub

/// One kind of write of the PostgreSQL hub, in a database of its own: what it needs first,
/// the write, and whether what it did is on the server.
struct DurableWrite: Sendable {
  enum Kind: String, CaseIterable, Sendable {
    case append, blob, smallBlobs, objects, touchObjects, damagedBlob, damagedObject
    case retention, prune, forget
  }

  let kind: Kind
  let url: String
  let database: String
  let admin: PrivateClusterAdmin
  /// Made by ``prepare``: the records, blobs and objects the write acts on.
  let given: Given

  struct Given: Sendable {
    var records: [HubRecord] = []
    var blob: [UInt8] = []
    var content: [UInt8] = []
    var objects: [HubObject] = []
  }

  /// The table whose change the write's commit waits on.
  var table: String {
    switch kind {
    case .append: "records"
    case .blob, .smallBlobs: "blobs"
    case .objects, .touchObjects: "objects"
    case .damagedBlob: "wanted"
    case .damagedObject: "wanted_objects"
    case .retention: "settings"
    case .prune, .forget: "erasures"
    }
  }

  init(_ kind: Kind, on cluster: PrivatePostgresCluster) async throws {
    self.kind = kind
    admin = cluster.admin
    nonisolated(unsafe) let cluster = cluster
    guard
      case .location(let location, let environment) = try await offThePool({
        try cluster.newLibraryHub()
      }),
      var components = URLComponents(string: location)
    else { throw HubError.invalidLocation("the private cluster made no hub location") }
    components.password = environment["PGPASSWORD"]
    url = try #require(components.string)
    database = String(components.path.dropFirst())
    given = try await Self.prepare(kind, hub: try PostgresHub(location: url), admin, database)
    try await admin.query(
      """
      CREATE FUNCTION docsync.hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep(120); RETURN NULL; END $$
      """, database: database)
  }

  func hub() throws -> PostgresHub { try PostgresHub(location: url) }

  private static func prepare(
    _ kind: Kind, hub: PostgresHub, _ admin: PrivateClusterAdmin, _ database: String
  ) async throws -> Given {
    var given = Given()
    switch kind {
    case .append:
      given.records = [makeRecord("appended")]
    case .blob:
      // Three chunks of 1 MiB or less, each a statement of its own.
      given.content = (0..<(2_500_000)).map { UInt8(truncatingIfNeeded: $0 &* 31 >> 3) }
      given.blob = HubHash.sha256(given.content)
    case .smallBlobs:
      given.content = Array("a small blob".utf8)
      given.blob = HubHash.sha256(given.content)
    case .objects:
      given.objects = [ObjectStoreConformance.chunk("put")]
    case .touchObjects:
      given.objects = [ObjectStoreConformance.chunk("touched")]
      try await hub.putObjects(given.objects)
      try await admin.query(
        "UPDATE docsync.objects SET touched = now() - interval '2 days'", database: database)
    case .damagedBlob:
      given.content = Array("content that the disk damages".utf8)
      given.blob = try await putBlob(hub, given.content)
      try await hub.append([makeRecord("names it", blobs: [given.blob])])
      try await admin.query(
        "UPDATE docsync.chunks SET data = set_byte(data, 0, get_byte(data, 0) # 255)",
        database: database)
    case .damagedObject:
      given.objects = [ObjectStoreConformance.chunk("damaged")]
      try await hub.putObjects(given.objects)
      try await admin.query(
        "UPDATE docsync.objects SET data = set_byte(data, 1, get_byte(data, 1) # 255)",
        database: database)
    case .retention:
      break
    case .prune:
      given.records = try await versionChain(hub, ["one", "two", "three"]).map(\.record)
      try await hub.append(given.records)
    case .forget:
      given.records = [makeRecord("forgotten", blobs: [try await putBlob(hub, [1, 2, 3])])]
      try await hub.append(given.records)
    }
    return given
  }

  /// Holds every commit that changed ``table`` back for two minutes, or lets them go.
  func holdCommits(_ hold: Bool) async throws {
    try await admin.query(
      hold
        ? """
        CREATE CONSTRAINT TRIGGER hold_commit AFTER INSERT OR UPDATE OR DELETE
        ON docsync.\(table) DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION docsync.hold_commit()
        """
        : "DROP TRIGGER hold_commit ON docsync.\(table)",
      database: database)
  }

  /// The write, as the sync engine makes it.
  func run(_ hub: PostgresHub) async throws {
    switch kind {
    case .append:
      try await hub.append(given.records)
    case .blob:
      let file = try TemporaryFile(given.content)
      try await hub.putBlob(hash: given.blob, from: file.descriptor)
    case .smallBlobs:
      _ = try await hub.putSmallBlobs([given.blob: given.content])
    case .objects:
      try await hub.putObjects(given.objects)
    case .touchObjects:
      #expect(try await hub.missingObjects(given.objects.map(\.id)).isEmpty)
    case .damagedBlob:
      let condition = try await hub.reportDamagedBlob(hash: given.blob)
      #expect(condition == .wanted, "\(condition)")
    case .damagedObject:
      #expect(try await hub.objects(given.objects.map(\.id)).isEmpty)
    case .retention:
      try await hub.setRetention("keep 0")
    case .prune:
      try await hub.prune(records: given.records.map(\.id))
    case .forget:
      try await hub.forget(records: given.records.map(\.id))
    }
  }

  /// Whether what ``run(_:)`` did is on the server.
  func isPresent(_ hub: PostgresHub) async throws -> Bool {
    switch kind {
    case .append:
      return try await allRecords(hub) == given.records
    case .blob, .smallBlobs:
      guard try await hub.hasBlob(hash: given.blob) else { return false }
      return try await fetchBlob(hub, given.blob) == given.content
    case .objects:
      return try await hub.objects(given.objects.map(\.id)).count == given.objects.count
    case .touchObjects:
      let fresh = try await admin.count(
        "SELECT count(*) FROM docsync.objects WHERE touched > now() - interval '1 hour'",
        database: database)
      return fresh == given.objects.count
    case .damagedBlob:
      return try await hub.wantedBlobs() == [given.blob]
    case .damagedObject:
      return try await hub.wantedObjects() == given.objects.map(\.id)
    case .retention:
      return try await hub.retention() == "keep 0"
    case .prune, .forget:
      return try await !hub.erasures(after: .start, limit: 10).erasures.isEmpty
    }
  }
}
