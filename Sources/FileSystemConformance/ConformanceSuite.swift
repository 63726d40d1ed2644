import Glibc
import SystemPackage

/// One behaviour of a file system, checked against a subject inside a scratch folder.
public struct ConformanceCheck: Sendable, CustomStringConvertible {
  /// What the check proves, as a sentence ("rename over an existing file replaces it").
  public let name: String
  /// The operation group the check belongs to ("files", "rename", "xattr"…).
  public let group: String
  /// Capabilities the subject must have; a subject without them must leave the check out.
  public let requires: SubjectCapabilities
  /// Runs the check; `scratch` is an empty folder (a path relative to the subject root) that
  /// belongs to this run alone. Throws ``ConformanceFailure`` (or an `Errno`) on failure.
  public let run: @Sendable (any FileSystemSubject, _ scratch: String) throws -> Void

  public init(
    _ name: String, group: String, requires: SubjectCapabilities = [],
    run: @escaping @Sendable (any FileSystemSubject, _ scratch: String) throws -> Void
  ) {
    self.name = name
    self.group = group
    self.requires = requires
    self.run = run
  }

  init(
    _ name: String, _ group: String, requires: SubjectCapabilities = [],
    _ body: @escaping @Sendable (CheckContext) throws -> Void
  ) {
    self.init(name, group: group, requires: requires) { subject, scratch in
      try body(CheckContext(subject: subject, scratch: scratch))
    }
  }

  public var description: String {
    requires.isEmpty ? "\(group): \(name)" : "\(group): \(name) \(requires)"
  }
}

/// A failed check: what was expected and what happened.
public struct ConformanceFailure: Error, CustomStringConvertible {
  public var message: String
  /// The error number behind the failure, when a subject operation failed.
  public var errno: Errno?
  public init(_ message: String, errno: Errno? = nil) {
    self.message = message
    self.errno = errno
  }
  public var description: String { message }
}

/// Every check of the suite and the runner that gives each one its own scratch folder.
public enum ConformanceSuite {
  /// All checks, in a stable order.
  public static let checks: [ConformanceCheck] =
    fileChecks + attributeChecks + timeChecks + directoryChecks + renameChecks + linkChecks
    + extendedAttributeChecks + nameChecks + lockChecks + versionsChecks + permissionChecks

  /// The checks whose requirements `capabilities` meets.
  public static func checks(for capabilities: SubjectCapabilities) -> [ConformanceCheck] {
    checks.filter { capabilities.isSuperset(of: $0.requires) }
  }

  /// The checks that `capabilities` leaves out, to be reported rather than skipped silently.
  public static func excludedChecks(for capabilities: SubjectCapabilities) -> [ConformanceCheck] {
    checks.filter { !capabilities.isSuperset(of: $0.requires) }
  }

  /// Runs `check` on `subject` in a new scratch folder at the subject root (named after the
  /// check, with a random suffix, so that checks may run concurrently), then removes the folder.
  ///
  /// Throws ``ConformanceFailure`` when the check fails, or when the subject lacks a capability
  /// that the check requires.
  public static func run(_ check: ConformanceCheck, on subject: any FileSystemSubject) throws {
    let missing = check.requires.subtracting(subject.capabilities)
    guard missing.isEmpty else {
      throw ConformanceFailure("\(check.name): the subject lacks \(missing)")
    }
    let scratch = scratchName(for: check.name)
    do {
      try subject.makeDirectory(scratch, mode: 0o755)
    } catch {
      throw ConformanceFailure("\(check.name): cannot make scratch folder \(scratch): \(error)")
    }
    var failure: (any Error)?
    do {
      try check.run(subject, scratch)
    } catch let error as ConformanceFailure {
      failure = ConformanceFailure("\(check.name): \(error.message)", errno: error.errno)
    } catch let error as Errno {
      failure = ConformanceFailure("\(check.name): unexpected \(describe(error))", errno: error)
    } catch {
      failure = ConformanceFailure("\(check.name): \(error)")
    }
    do {
      try removeTree(scratch, on: subject)
    } catch {
      failure = failure ?? ConformanceFailure("\(check.name): cannot remove \(scratch): \(error)")
    }
    if let failure { throw failure }
  }

  static func scratchName(for name: String) -> String {
    let slug = String(
      name.lowercased().unicodeScalars.prefix(40).map {
        ("a"..."z").contains($0) || ("0"..."9").contains($0) ? Character($0) : "-"
      })
    var generator = SystemRandomNumberGenerator()
    let suffix = String(generator.next() as UInt64, radix: 16)
    return "conformance-\(slug)-\(suffix)"
  }

  /// Removes `path` and everything below it through the subject (`rm -rf`).
  public static func removeTree(_ path: String, on subject: any FileSystemSubject) throws {
    let status = try subject.status(path, followSymlinks: false)
    guard status.kind == .directory else { return try subject.removeFile(path) }
    try subject.setMode(path, 0o700)
    let directory = try subject.openDirectory(path)
    var names: [String] = []
    do {
      while true {
        let batch = try subject.readDirectory(directory, maximumCount: 256)
        if batch.isEmpty { break }
        names += batch.map(\.name).filter { !isDotOrDotDot($0) }
      }
    } catch {
      try? subject.close(directory)
      throw error
    }
    try subject.close(directory)
    for name in names { try removeTree(path + "/" + name, on: subject) }
    try subject.removeDirectory(path)
  }
}

func isDotOrDotDot(_ name: String) -> Bool {
  let bytes = Array(name.utf8)
  return bytes == [0x2E] || bytes == [0x2E, 0x2E]
}

/// `ENOENT (No such file or directory)`.
func describe(_ error: Errno) -> String {
  let names: [Int32: String] = [
    EPERM: "EPERM", ENOENT: "ENOENT", EIO: "EIO", EBADF: "EBADF", EAGAIN: "EAGAIN",
    EACCES: "EACCES", EBUSY: "EBUSY", EEXIST: "EEXIST", EXDEV: "EXDEV", ENODEV: "ENODEV",
    ENOTDIR: "ENOTDIR", EISDIR: "EISDIR", EINVAL: "EINVAL", ENOSPC: "ENOSPC", EROFS: "EROFS",
    EMLINK: "EMLINK", ERANGE: "ERANGE", ENAMETOOLONG: "ENAMETOOLONG", ENOSYS: "ENOSYS",
    ENOTEMPTY: "ENOTEMPTY", ELOOP: "ELOOP", ENODATA: "ENODATA", EOPNOTSUPP: "EOPNOTSUPP",
    ENOTTY: "ENOTTY", EFBIG: "EFBIG", ESPIPE: "ESPIPE", E2BIG: "E2BIG",
  ]
  return "\(names[error.rawValue] ?? "errno \(error.rawValue)") (\(error))"
}
