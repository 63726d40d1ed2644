import Foundation
import Hub
import PostgresHub
import Synchronization
import Testing

import func MountHarness.run

/// Where the built `hub-stress` is: `DOCSYNC_BIN_DIR`, else next to the test runner, which on
/// Linux lives in the build's bin folder.
enum StressTool {
  static let url: URL? = {
    let environment = ProcessInfo.processInfo.environment
    let folder =
      environment["DOCSYNC_BIN_DIR"].map { URL(fileURLWithPath: $0) }
      ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let url = folder.appendingPathComponent("hub-stress")
    return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
  }()

  static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

  /// Runs the tool to completion, returning its exit status and what it printed.
  static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
    guard let url else {
      throw StressToolMissing()
    }
    // posix_spawn, not Foundation's Process (see PostgresTestCluster.createAccount), on a
    // thread of its own: waiting for the tool must not hold one of the few threads of the
    // pool that the other tests' tasks run on.
    let argv = [url.path] + arguments
    let result = try await withCheckedThrowingContinuation { continuation in
      Thread.detachNewThread {
        continuation.resume(with: Result { try MountHarness.run(argv, timeout: .seconds(600)) })
      }
    }
    return (result.status, result.stdout + result.stderr)
  }
}

struct StressToolMissing: Error, CustomStringConvertible {
  var description: String {
    "hub-stress is not built next to the test runner; build with --build-tests or set DOCSYNC_BIN_DIR"
  }
}

@Suite("Hubs with concurrent processes")
struct ConcurrentProcessesTests {
  static let writers = 4
  static let perWriter = 150

  // Skipped only outside CI when the tool is absent; under CI=true it runs and fails instead.
  @Test(
    "several processes append to a SQLite hub while a reader pages through",
    .enabled(if: StressTool.url != nil || StressTool.isCI, "hub-stress is not built"),
    arguments: [false, true])
  func sqliteAppenders(writersCreateTheHub: Bool) async throws {
    let folder = try ScratchFolder()
    let path = folder.path + "/hub.sqlite"
    // Either the reader creates the file first, or the writers race to create and migrate it.
    let early: (any Hub)? = writersCreateTheHub ? nil : try SQLiteHub(path: path)
    try await Self.race(
      location: path, label: writersCreateTheHub ? "writers create the hub" : "hub created first"
    ) { finished in
      // Open while the writers are creating it, retrying only until the file appears; writers
      // that could not start never create it, and the race reports why.
      while !FileManager.default.fileExists(atPath: path) && !finished.value {
        try await Task.sleep(for: .milliseconds(2))
      }
      return try SQLiteHub(path: path)
    }
    withExtendedLifetime(early) {}
  }

  @Test(
    "several processes append to a PostgreSQL hub while a reader pages through",
    .enabled(if: StressTool.url != nil || StressTool.isCI, "hub-stress is not built"),
    .enabled(if: PostgresTestCluster.isEnabled))
  func postgresAppenders() async throws {
    let (url, _) = try await PostgresTestCluster.freshHubURL()
    try await Self.race(location: url, label: "PostgreSQL") { _ in try PostgresHub(location: url) }
  }

  /// Runs `writers` hub-stress processes on the hub at `location`, each appending `perWriter`
  /// records, while a reader from `openReader` pages through in small pages; then checks that
  /// every record was seen exactly once, in each writer's order, and that a fresh reader agrees.
  static func race(
    location: String, label: String, openReader: (Finished) async throws -> any Hub
  ) async throws {
    let clock = ContinuousClock()
    let started = clock.now
    let writerNames = (0..<Self.writers).map { "writer\($0)" }
    let finished = Finished()
    let processes = Task {
      defer { finished.set() }
      return try await withThrowingTaskGroup(of: (String, Int32, String).self) { group in
        for name in writerNames {
          group.addTask {
            let (status, output) = try await StressTool.run([
              location, name, String(Self.perWriter),
            ])
            return (name, status, output)
          }
        }
        var results: [(String, Int32, String)] = []
        for try await result in group { results.append(result) }
        return results
      }
    }
    let reader: any Hub
    do {
      reader = try await openReader(finished)
    } catch {
      _ = try await processes.value
      throw error
    }

    // Page concurrently with the writers, in small pages, until they are done and drained.
    var seen: [HubRecord] = []
    var seenIDs = Set<[UInt8]>()
    var duplicates = 0
    var pages = 0
    var cursor = HubCursor.start
    var lastSeq: Int64 = 0
    var writersDone = false
    while true {
      let page = try await reader.records(after: cursor, limit: 7)
      if page.records.isEmpty {
        if writersDone { break }
        if finished.value {
          writersDone = true
          continue  // one more page: the last commits may have landed since the previous one
        }
        _ = try await reader.waitForChanges(after: cursor, timeout: .milliseconds(200))
        continue
      }
      pages += 1
      for record in page.records where !seenIDs.insert(record.id).inserted {
        duplicates += 1
      }
      seen += page.records
      let seq = try #require(Int64(page.cursor.serialized))
      #expect(seq > lastSeq)
      lastSeq = seq
      cursor = page.cursor
    }
    let elapsed = started.duration(to: clock.now)

    let results = try await processes.value
    for (name, status, output) in results {
      #expect(status == 0, "\(name) exited with \(status): \(output)")
    }

    let expected = writerNames.flatMap { name in
      (0..<Self.perWriter).map { HubHash.sha256(Array("hub-stress \(name) \($0)".utf8)) }
    }
    #expect(duplicates == 0)
    #expect(seen.count == Self.writers * Self.perWriter)
    #expect(seenIDs == Set(expected))

    // Each writer appends in order, so its records must appear in the hub in that order.
    var nextIndex: [String: Int] = [:]
    for record in seen {
      let words = String(decoding: record.payload, as: UTF8.self).split(separator: " ")
      let name = String(words[0])
      let index = Int(words[1])!
      #expect(index == nextIndex[name, default: 0], "\(name) out of order")
      nextIndex[name] = index + 1
      #expect(record.blobs.count == 1)
    }
    for record in seen.prefix(20) {
      #expect(try await reader.hasBlob(hash: record.blobs[0]))
    }

    // A fresh reader from the start agrees exactly.
    let again = try await allRecords(openReader(finished))
    #expect(again == seen)

    print(
      "hub stress (\(label)): \(Self.writers) processes x \(Self.perWriter) appends, "
        + "\(seen.count) records seen in \(pages) pages in \(elapsed), duplicates \(duplicates)")
  }
}

final class Finished: Sendable {
  private let flag = Mutex(false)
  var value: Bool { flag.withLock { $0 } }
  func set() { flag.withLock { $0 = true } }
}
