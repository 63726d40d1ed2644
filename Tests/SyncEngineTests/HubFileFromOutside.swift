import Foundation

import func MountHarness.run

// What the damage tests do to a SQLite hub's file from outside it, as a failing disk or a
// meddling tool would.

/// Lowercase hex, as sqlite3 prints `lower(hex(...))`.
func hexOf(_ bytes: [UInt8]) -> String {
  bytes.map { String(format: "%02x", $0) }.joined()
}

/// Runs `sql` on the hub file with the sqlite3 program; returns what it printed.
@discardableResult
func sqlite(_ database: String, _ sql: String) throws -> String {
  // posix_spawn, not Foundation's Process, whose run() in Swift 6.3.1 over-reads a `dirent`
  // and can crash the test run (swift-corelibs-foundation PR #5472).
  let result = try run(["/usr/bin/sqlite3", database, sql])
  guard result.status == 0 else { throw CocoaError(.fileWriteUnknown) }
  return result.stdout
}
