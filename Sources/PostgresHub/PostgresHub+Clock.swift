import Hub
import PostgresNIO

extension PostgresHub {
  /// The server's wall clock, in seconds since 1970, for `docsync doctor`'s comparison with
  /// this device's: other devices refuse records more than a day ahead of their own clocks,
  /// and between concurrent edits the later time wins.
  public func serverClock() async throws(HubError) -> Double {
    try await withConnection(answerWithin: .seconds(15)) { connection in
      // clock_timestamp(), not now(): now() is the start of the transaction.
      let rows = try await connection.rows(
        "SELECT extract(epoch FROM clock_timestamp())::float8")
      var seconds = 0.0
      for value in try rows.decode(Double.self) { seconds = value }
      return seconds
    }
  }
}
