import Foundation

/// Makes `table` unreadable in the SQLite database at `path`, as a bad sector would: after a
/// checkpoint (so that the journal holds nothing newer), the first byte of the table's root
/// page, the page's type, becomes one SQLite never writes.
public func damageRootPage(of table: String, in path: String) throws {
  _ = try check(["/usr/bin/sqlite3", path, "PRAGMA wal_checkpoint(TRUNCATE)"])
  let answer = try check([
    "/usr/bin/sqlite3", path,
    "SELECT rootpage FROM sqlite_master WHERE name = '\(table)'; PRAGMA page_size;",
  ]).stdout.split(separator: "\n")
  guard answer.count == 2, let page = UInt64(answer[0]), let size = UInt64(answer[1]) else {
    throw RunError(description: "unexpected answer from sqlite3 about \(table): \(answer)")
  }
  let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
  defer { try? file.close() }
  try file.seek(toOffset: (page - 1) * size)
  try file.write(contentsOf: Data([0]))
}
