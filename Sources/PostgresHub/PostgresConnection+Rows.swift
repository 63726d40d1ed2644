import PostgresNIO

extension PostgresConnection {
  /// Every row of `query`, read before this returns: the one way the hub runs a statement.
  ///
  /// Never through postgres-nio's row sequence (`for try await row in try await query(...)`),
  /// which crashed three daemons of Tools/bench-many-devices.sh when the server stopped. The
  /// sequence asks for rows only as its consumer takes them, so between two batches the row
  /// stream waits for demand (`RowStreamStateMachine.waitingForDemand`) and the channel
  /// reads nothing. When the server then closes the connection, NIO drains the socket
  /// regardless (`BaseSocketChannel.readEOF0`: a read, then `channelReadComplete`, without
  /// a `read()` asked for) and postgres-nio 1.33.2 traps on that `channelReadComplete`
  /// ("How can we receive a body part, after a channelReadComplete, but no read has been
  /// forwarded yet"), with TLS through `NIOSSLHandler.doFlushReadData` and without TLS
  /// straight from `readable0`: the case async-http-client#450 fixed in its own state
  /// machine. Collected with postgres-nio's `all()` instead, each batch asks for the next on
  /// the event loop as it arrives, so the stream waits only for a read, never for demand, and
  /// an EOF ends in an error. Every statement here moves a bounded amount (a page, a chunk),
  /// so nothing is lost by holding its rows at once. PostgresRowStreamTests stops the server
  /// under streaming reads of each kind.
  @discardableResult
  func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
    let result: EventLoopFuture<PostgresQueryResult> = self.query(query, logger: Connections.logger)
    return try await result.get().rows
  }

  /// Runs `query` for what it does; its rows, if any, are read and dropped (see ``rows(_:)``).
  func run(_ query: PostgresQuery) async throws {
    try await rows(query)
  }
}

extension Array where Element == PostgresRow {
  /// The one column of each row, as `Column`.
  func decode<Column: PostgresDecodable>(_ type: Column.Type) throws -> [Column] {
    try map { try $0.decode(Column.self) }
  }

  /// The columns of each row, as the tuple `columns` names.
  func decode<each Column: PostgresDecodable>(
    _ columns: (repeat each Column).Type
  ) throws -> [(repeat each Column)] {
    try map { try $0.decode(columns) }
  }
}
