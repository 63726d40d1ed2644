import Foundation
import Hub
import PostgresNIO

/// The hub's schema steps, applied in order on first use and recorded in `docsync.migrations`.
///
/// Each step is a SQL file in `Migrations/`, embedded in the binary: `docsync hub init` (an
/// administrator) applies them, or a device on first use of a database it may set up. Released
/// steps are never edited: a change is a new file.
enum Migrations {
  static let steps: [(version: Int, name: String, sql: [UInt8])] = [
    (1, "v0001_accounts_records_blobs", PackageResources.v0001_accounts_records_blobs_sql),
    (2, "v0002_least_privilege", PackageResources.v0002_least_privilege_sql),
    (3, "v0003_blob_repair", PackageResources.v0003_blob_repair_sql),
    (4, "v0004_retention", PackageResources.v0004_retention_sql),
    (5, "v0005_erasures_and_forget", PackageResources.v0005_erasures_and_forget_sql),
    (6, "v0006_released_blobs_not_wanted", PackageResources.v0006_released_blobs_not_wanted_sql),
    (7, "v0007_row_checks_use_indexes", PackageResources.v0007_row_checks_use_indexes_sql),
    (8, "v0008_upload_sweep_uses_an_index", PackageResources.v0008_upload_sweep_uses_an_index_sql),
    (9, "v0009_content_objects", PackageResources.v0009_content_objects_sql),
    (10, "v0010_objects_freed_at_once", PackageResources.v0010_objects_freed_at_once_sql),
    (
      11, "v0011_append_holds_the_head_briefly",
      PackageResources.v0011_append_holds_the_head_briefly_sql
    ),
    (12, "v0012_smaller_object_rows", PackageResources.v0012_smaller_object_rows_sql),
    (13, "v0013_devices_from", PackageResources.v0013_devices_from_sql),
    (14, "v0014_objects_keyed_by_number", PackageResources.v0014_objects_keyed_by_number_sql),
    (15, "v0015_blob_twins", PackageResources.v0015_blob_twins_sql),
  ]

  /// The last step a device needs to work correctly: step 9's content objects, which new
  /// versions' content moves as. Later steps only change what prune and forget give back
  /// (step 10) and how briefly an append holds the account's head (step 11, which a device
  /// uses where the hub has it), so a device whose role may not apply them keeps working on a
  /// hub an administrator has not upgraded yet, rather than refusing to sync until someone
  /// does.
  static let required = 9

  /// The step from which devices read objects through functions (PostgresHub+Objects.swift).
  static let objectsKeyedByNumber = 14

  /// The step from which the hub keeps blobs' twins (PostgresHub+Twins.swift).
  static let blobTwins = 15

  /// Any key would do; this one spells "docsync" so that it is recognisable in `pg_locks`.
  static let lockKey: Int64 = 0x646f_6373_796e_63

  /// Applies the steps the hub lacks where the role may; the step the hub is at afterwards.
  @discardableResult
  static func run(on connection: PostgresConnection) async throws -> Int {
    // Look first, without locking or creating anything: a device role may not create the
    // schema, and need not once an administrator has.
    let found = try await appliedVersion(connection)
    if found >= steps.last!.version {
      try await checkDevicesFrom(connection)
      return found
    }
    do {
      try await apply(on: connection)
      return steps.last!.version
    } catch let error as PSQLError where found > 0 && error.serverInfo?[.sqlState] == "42501" {
      // A device role may not change a schema an administrator made, and must not.
      if found >= required {
        Connections.logger.notice(
          """
          the hub's schema is at step \(found) of \(steps.last!.version): it works, and \
          docsync hub init ADMIN-URL makes it faster
          """)
        return found
      }
      throw HubError.invalidLocation(
        "the hub's schema is at step \(found) and this docsync needs step \(required): "
          + "an administrator upgrades it with docsync hub init ADMIN-URL")
    }
  }

  /// Applies the steps the hub lacks up to `last` (all of them by default; the tests stop
  /// earlier to make a hub as an older docsync left it).
  static func apply(on connection: PostgresConnection, through last: Int = steps.last!.version)
    async throws
  {
    try await connection.inTransaction { connection in
      // Two devices that open a new hub at once: the second waits here, then finds the steps
      // applied.
      try await connection.run("SELECT pg_advisory_xact_lock(\(lockKey))")
      try await connection.run("CREATE SCHEMA IF NOT EXISTS docsync")
      try await connection.run(
        """
        CREATE TABLE IF NOT EXISTS docsync.migrations (
          version integer PRIMARY KEY, name text NOT NULL,
          applied timestamptz NOT NULL DEFAULT now())
        """)
      let applied = try await appliedVersion(connection)
      for step in steps where step.version > applied && step.version <= last {
        // The row first, so that a step that devices must know can say so in its own SQL
        // (`UPDATE docsync.migrations SET devices_from = N WHERE version = N`).
        try await connection.run(
          "INSERT INTO docsync.migrations (version, name) VALUES (\(step.version), \(step.name))")
        // postgres-nio speaks the extended protocol, one statement per query.
        for statement in statements(of: String(decoding: step.sql, as: UTF8.self)) {
          try await connection.run(PostgresQuery(unsafeSQL: statement))
        }
      }
    }
  }

  /// Refuses, in one line, a hub with a step this docsync does not know and devices must.
  ///
  /// A step declares that in `docsync.migrations.devices_from` (step 13 on); the row is read
  /// through `to_jsonb`, so that a hub from before the column reads as requiring nothing.
  static func checkDevicesFrom(_ connection: PostgresConnection) async throws {
    let rows = try await connection.rows(
      """
      SELECT coalesce(max((to_jsonb(m) ->> 'devices_from')::integer), 0)::bigint,
        coalesce(max(version), 0)::bigint
      FROM docsync.migrations m
      """)
    for (needed, applied) in try rows.decode((Int, Int).self) where needed > steps.last!.version {
      throw HubError.needsNewerDocsync(
        "its schema is at step \(applied), which devices from step \(needed) on can use, and this "
          + "docsync knows steps up to \(steps.last!.version)")
    }
  }

  static func appliedVersion(_ connection: PostgresConnection) async throws -> Int {
    let exists = try await connection.rows(
      "SELECT to_regclass('docsync.migrations') IS NOT NULL")
    for present in try exists.decode(Bool.self) where !present { return 0 }
    let rows = try await connection.rows(
      "SELECT coalesce(max(version), 0)::bigint FROM docsync.migrations")
    for version in try rows.decode(Int.self) { return version }
    return 0
  }

  /// The statements of a migration file: split at a `;` that ends a line outside a `$$` body;
  /// whole-line `--` comments dropped. The files are written to that rule.
  static func statements(of sql: String) -> [String] {
    var statements: [String] = []
    var current = ""
    var inBody = false
    for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if !inBody && (trimmed.hasPrefix("--") || trimmed.isEmpty) { continue }
      if line.components(separatedBy: "$$").count % 2 == 0 { inBody.toggle() }
      current += line + "\n"
      if !inBody && trimmed.hasSuffix(";") {
        statements.append(current)
        current = ""
      }
    }
    if !current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
      statements.append(current)
    }
    return statements
  }
}
