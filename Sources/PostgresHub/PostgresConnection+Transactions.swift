import PostgresNIO

extension PostgresConnection {
  /// Runs `body` in a transaction that is committed before this returns, and rolled back when
  /// `body` throws: the one way every write of the hub reaches the server.
  ///
  /// A statement run outside a transaction is not durable when postgres-nio says it is done.
  /// postgres-nio speaks the extended protocol and ends a statement at its CommandComplete;
  /// the server commits such a statement's implicit transaction only at the Sync that
  /// follows, after it sent CommandComplete. A server stopped in between (`pg_ctl stop -m
  /// fast`, as Tools/bench-many-devices.sh does) rolled back a write that the device had been
  /// told was made. An explicit COMMIT is answered only once the commit is done: PostgreSQL
  /// finishes a transaction statement before it sends its CommandComplete
  /// (`exec_execute_message` in postgres.c). PostgresHubTests' acknowledgedWritesSurviveAStop
  /// holds every commit back with a deferred trigger and stops the server meanwhile.
  func inTransaction<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
    try await run("BEGIN")
    do {
      let value = try await body(self)
      try await run("COMMIT")
      return value
    } catch {
      _ = try? await run("ROLLBACK")
      throw error
    }
  }
}
