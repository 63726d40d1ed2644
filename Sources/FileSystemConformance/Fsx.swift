import SystemPackage

/// A randomized file-integrity exerciser in the manner of fsx: random writes, truncates,
/// reads, mmap reads and writes, and reopens of one file, checked against an in-memory model.
public enum Fsx {
  /// Runs `operations` random operations on the file at `path` (created or emptied first,
  /// left in place afterwards) and compares every byte read with the model, and the whole file
  /// at the end. mmap operations run only when the subject has `.mmap`.
  ///
  /// Throws ``ConformanceFailure`` naming the seed, the operation index and the last
  /// operations; the same seed replays the same sequence.
  public static func run(
    subject: any FileSystemSubject, path: String, seed: UInt64, operations: Int,
    maxFileSize: Int
  ) throws {
    var exerciser = Exerciser(
      subject: subject, path: path, seed: seed, maxFileSize: max(maxFileSize, 1),
      mmap: subject.capabilities.contains(.mmap))
    try exerciser.run(operations: operations)
  }
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast and the same on every platform.
public struct SplitMix64: RandomNumberGenerator, Sendable {
  var state: UInt64
  /// A generator whose sequence is fixed by `seed`.
  public init(seed: UInt64) { state = seed }
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

struct Exerciser {
  let subject: any FileSystemSubject
  let path: String
  let seed: UInt64
  let maxFileSize: Int
  let mmap: Bool
  var random: SplitMix64
  var model: [UInt8] = []
  var file: OpenFile?
  var history: [String] = []
  var index = 0

  init(subject: any FileSystemSubject, path: String, seed: UInt64, maxFileSize: Int, mmap: Bool) {
    self.subject = subject
    self.path = path
    self.seed = seed
    self.maxFileSize = maxFileSize
    self.mmap = mmap
    self.random = SplitMix64(seed: seed)
  }

  var maxLength: Int { min(maxFileSize, 1 << 16) }

  mutating func run(operations: Int) throws {
    file = try perform("create \(path)") {
      try subject.open(path, [.readWrite, .create, .truncate], mode: 0o644)
    }
    for i in 0..<operations {
      index = i
      let choice = Int.random(in: 0..<100, using: &random)
      switch choice {
      case 0..<30: try write()
      case 30..<55: try read()
      case 55..<65: try truncate()
      case 65..<75 where mmap: try mapWrite()
      case 65..<85 where mmap: try mapRead()
      case 65..<85: try read()
      case 85..<92: try reopen()
      case 92..<96: try synchronize()
      default: try checkSize()
      }
    }
    index = operations
    try checkAll()
    try perform("close") { try subject.close(handle) }
    file = nil
  }

  var handle: OpenFile { file! }

  mutating func randomRange(within limit: Int) -> (offset: Int, count: Int) {
    let offset = Int.random(in: 0..<max(limit, 1), using: &random)
    let count = Int.random(in: 1...max(1, min(maxLength, limit - offset)), using: &random)
    return (offset, count)
  }

  mutating func randomBytes(_ count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    var word: UInt64 = 0
    for i in 0..<count {
      if i % 8 == 0 { word = random.next() }
      bytes[i] = UInt8(truncatingIfNeeded: word >> (UInt64(i % 8) * 8))
    }
    return bytes
  }

  mutating func write() throws {
    let (offset, count) = randomRange(within: maxFileSize)
    let bytes = randomBytes(count)
    record("write \(offset)+\(count)")
    let written = try perform("write") { try subject.write(handle, bytes, at: Int64(offset)) }
    guard written == count else { throw failure("write returned \(written), not \(count)") }
    apply(bytes, at: offset)
  }

  mutating func mapWrite() throws {
    let (offset, count) = randomRange(within: maxFileSize)
    let bytes = randomBytes(count)
    record("mapwrite \(offset)+\(count)")
    if offset + count > model.count {
      // A mapping cannot grow a file: extend it first, as fsx's domapwrite does.
      try perform("ftruncate before mapwrite") {
        try subject.truncate(handle, size: Int64(offset + count))
      }
      model += [UInt8](repeating: 0, count: offset + count - model.count)
    }
    try perform("mapwrite") { try subject.mapWrite(handle, bytes, at: Int64(offset)) }
    apply(bytes, at: offset)
  }

  mutating func apply(_ bytes: [UInt8], at offset: Int) {
    if offset + bytes.count > model.count {
      model += [UInt8](repeating: 0, count: offset + bytes.count - model.count)
    }
    model.replaceSubrange(offset..<offset + bytes.count, with: bytes)
  }

  mutating func read() throws {
    let (offset, count) = randomRange(within: max(model.count, 1) + 100)
    record("read \(offset)+\(count)")
    let bytes = try perform("read") { try subject.read(handle, at: Int64(offset), count: count) }
    try compare(bytes, at: offset, expectedCount: max(0, min(count, model.count - offset)))
  }

  mutating func mapRead() throws {
    guard !model.isEmpty else { return try read() }
    let (offset, count) = randomRange(within: model.count)
    record("mapread \(offset)+\(count)")
    let bytes = try perform("mapread") {
      try subject.mapRead(handle, at: Int64(offset), count: count)
    }
    try compare(bytes, at: offset, expectedCount: count)
  }

  mutating func truncate() throws {
    let size = Int.random(in: 0...maxFileSize, using: &random)
    record("truncate \(model.count) to \(size)")
    try perform("ftruncate") { try subject.truncate(handle, size: Int64(size)) }
    if size < model.count {
      model.removeSubrange(size...)
    } else {
      model += [UInt8](repeating: 0, count: size - model.count)
    }
  }

  mutating func reopen() throws {
    record("close and reopen")
    try perform("close") { try subject.close(handle) }
    file = nil
    file = try perform("reopen") { try subject.open(path, .readWrite, mode: 0) }
  }

  mutating func synchronize() throws {
    let dataOnly = Bool.random(using: &random)
    record(dataOnly ? "fdatasync" : "fsync")
    try perform("fsync") { try subject.synchronize(handle, dataOnly: dataOnly) }
  }

  mutating func checkSize() throws {
    record("stat")
    let status = try perform("fstat") { try subject.status(of: handle) }
    guard status.size == Int64(model.count) else {
      throw failure("size is \(status.size), the model says \(model.count)")
    }
  }

  mutating func checkAll() throws {
    record("final check of all \(model.count) bytes")
    try checkSize()
    var offset = 0
    var content: [UInt8] = []
    while true {
      let chunk = try perform("final read") {
        try subject.read(handle, at: Int64(offset), count: 1 << 16)
      }
      if chunk.isEmpty { break }
      content += chunk
      offset += chunk.count
    }
    try compare(content, at: 0, expectedCount: model.count)
  }

  func compare(_ bytes: [UInt8], at offset: Int, expectedCount: Int) throws {
    for i in 0..<min(bytes.count, expectedCount) where bytes[i] != model[offset + i] {
      throw failure(
        "byte at file offset \(offset + i) is \(bytes[i]), the model says \(model[offset + i])")
    }
    guard bytes.count == expectedCount else {
      throw failure("read \(bytes.count) bytes at \(offset), the model says \(expectedCount)")
    }
  }

  mutating func record(_ operation: String) {
    history.append("#\(index) \(operation)")
    if history.count > 12 { history.removeFirst() }
  }

  func perform<T>(_ what: String, _ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let error as Errno {
      throw failure("\(what) failed with \(describe(error))", errno: error)
    }
  }

  func failure(_ message: String, errno: Errno? = nil) -> ConformanceFailure {
    ConformanceFailure(
      "fsx seed \(seed), operation \(index) on \(path): \(message); last operations: "
        + history.joined(separator: "; "), errno: errno)
  }
}
