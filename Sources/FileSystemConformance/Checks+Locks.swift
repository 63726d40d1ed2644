import SystemPackage

extension ConformanceSuite {
  /// POSIX record locks belong to the process, so two descriptors of this process never
  /// conflict through `F_SETLK`; conflicts inside one process need OFD locks or `flock`.
  static let lockChecks: [ConformanceCheck] = [
    ConformanceCheck(
      "OFD locks conflict between two open file descriptions", "locks", requires: .locks
    ) {
      c in
      try c.writeFile("f", pattern(100))
      let a = try c.open("f", .readWrite)
      let b = try c.open("f", .readWrite)
      try c.lock(a, FileLock(.openFileDescription, .exclusive, start: 0, length: 50))
      try c.expectError(lockConflict, "exclusive OFD lock over a's range") {
        try c.subject.setLock(b, FileLock(.openFileDescription, .exclusive, start: 10, length: 5))
      }
      try c.expectError(lockConflict, "shared OFD lock over a's range") {
        try c.subject.setLock(b, FileLock(.openFileDescription, .shared, start: 0, length: 0))
      }
      try c.lock(b, FileLock(.openFileDescription, .exclusive, start: 50, length: 50))
      try c.lock(a, FileLock(.openFileDescription, .unlock, start: 0, length: 50))
      try c.lock(b, FileLock(.openFileDescription, .exclusive, start: 0, length: 50))
      try c.close(a)
      try c.close(b)
    },
    ConformanceCheck(
      "shared OFD locks coexist and closing a file releases its lock", "locks", requires: .locks
    ) {
      c in
      try c.writeFile("f", "x")
      let a = try c.open("f", .readWrite)
      let b = try c.open("f", .readWrite)
      try c.lock(a, FileLock(.openFileDescription, .shared))
      try c.lock(b, FileLock(.openFileDescription, .shared))
      try c.lock(b, FileLock(.openFileDescription, .unlock))
      try c.expectError(lockConflict, "exclusive OFD lock beside a shared one") {
        try c.subject.setLock(b, FileLock(.openFileDescription, .exclusive))
      }
      try c.close(a)
      try c.lock(b, FileLock(.openFileDescription, .exclusive))
      try c.close(b)
    },
    ConformanceCheck(
      "POSIX record locks of one process never conflict with each other", "locks", requires: .locks
    ) {
      c in
      try c.writeFile("f", "x")
      let a = try c.open("f", .readWrite)
      let b = try c.open("f", .readWrite)
      try c.lock(a, FileLock(.processRecord, .exclusive))
      try c.lock(b, FileLock(.processRecord, .exclusive))
      try c.lock(a, FileLock(.processRecord, .unlock))
      try c.close(a)
      try c.close(b)
    },
    ConformanceCheck("a POSIX record lock conflicts with an OFD lock", "locks", requires: .locks) {
      c in
      try c.writeFile("f", "x")
      let a = try c.open("f", .readWrite)
      let b = try c.open("f", .readWrite)
      try c.lock(a, FileLock(.processRecord, .exclusive, start: 0, length: 10))
      try c.expectError(lockConflict, "OFD lock over a process lock") {
        try c.subject.setLock(b, FileLock(.openFileDescription, .exclusive, start: 5, length: 1))
      }
      try c.lock(a, FileLock(.processRecord, .unlock, start: 0, length: 10))
      try c.lock(b, FileLock(.openFileDescription, .exclusive, start: 5, length: 1))
      try c.close(a)
      try c.close(b)
    },
    ConformanceCheck(
      "flock LOCK_EX|LOCK_NB on a second open file fails with EWOULDBLOCK", "locks",
      requires: .locks
    ) {
      c in
      try c.writeFile("f", "x")
      let a = try c.open("f", .read)
      let b = try c.open("f", .read)
      try c.lock(a, FileLock(.flock, .exclusive))
      try c.expectError([.wouldBlock], "second LOCK_EX") {
        try c.subject.setLock(b, FileLock(.flock, .exclusive))
      }
      try c.expectError([.wouldBlock], "LOCK_SH beside LOCK_EX") {
        try c.subject.setLock(b, FileLock(.flock, .shared))
      }
      try c.lock(a, FileLock(.flock, .unlock))
      try c.lock(b, FileLock(.flock, .shared))
      try c.lock(a, FileLock(.flock, .shared))
      try c.close(a)
      try c.close(b)
    },
  ]

  /// What a refused non-blocking `fcntl` lock gives: EAGAIN, or EACCES (POSIX allows both).
  static let lockConflict: [Errno] = [.resourceTemporarilyUnavailable, .permissionDenied]
}

extension CheckContext {
  func lock(_ file: OpenFile, _ lock: FileLock) throws {
    try step("lock \(lock.style) \(lock.kind) \(lock.start)+\(lock.length)") {
      try subject.setLock(file, lock)
    }
  }
}
